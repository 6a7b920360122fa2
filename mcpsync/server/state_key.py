"""The HMAC key of a server's MRTR ``requestState`` (see ``Dispatcher.state_key``),
which also signs the task messages a :class:`mcpsync.celery.CeleryExecutor` queues.

Apart from ``server.py`` because it is configuration, not the server's definition: the
key comes from ``Server(request_state_key=...)``, else the environment, else is made up
for this process alone. A made-up key is right for one process (``mcpsync serve``,
``flask run``, a test) and wrong wherever several processes serve the same clients, so
the warning is given only there (:func:`warn_unshared_key`), not on first use.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

#: mcpsync's own files: a warning points at the first frame outside them (the user's).
_PACKAGE = str(Path(__file__).resolve().parents[1])


def configured_state_key(key: bytes | str | None) -> bytes | None:
    """``key`` as bytes; ``None``: ``MCPSYNC_REQUEST_STATE_KEY``; ``None`` when neither
    says one (nothing several processes could share)."""
    if key is None:
        key = os.environ.get("MCPSYNC_REQUEST_STATE_KEY")
    if key is None:
        return None
    return key.encode("utf-8") if isinstance(key, str) else key


def resolve_state_key(key: bytes | str | None) -> bytes:
    """The configured key (:func:`configured_state_key`), else a random per-process one
    (multi round-trip requests then only work while every retry reaches this process)."""
    configured = configured_state_key(key)
    # os.urandom is what secrets.token_bytes reads, without importing random.
    return configured if configured is not None else os.urandom(32)


UNSHARED_KEY_WARNING = (
    "no request_state_key: each process makes up its own, so a multi round-trip request "
    "whose retry reaches another process is refused. {why}: give every process the same "
    "key, Server(request_state_key=...) or MCPSYNC_REQUEST_STATE_KEY (see docs/wsgi.md).")


def user_frame() -> tuple[str, int]:
    """The file and line of the innermost caller outside mcpsync (the user's code)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def warn_unshared_key(why: str, where: tuple[str, int] | None = None) -> None:
    """Warn that this server's key is its process's own where ``why`` says several
    processes share its clients; at ``where`` (a :func:`user_frame`), else at the user's
    code calling now. Callers warn once (per app, per process)."""
    filename, lineno = where if where is not None else user_frame()
    warnings.warn_explicit(UNSHARED_KEY_WARNING.format(why=why), UserWarning, filename,
                           lineno)
