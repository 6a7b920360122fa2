"""The pieces of an HTTP response body that outlive the WSGI call: a body whose ``close``
always runs its clean-up, and the check of whether the client has left while a stream waits.

They live apart from the app (``wsgi.py``) because they are about the WSGI server and the
client's socket, not about MCP: which server exposes the socket, and how EOF is told from
a quiet peer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Final

Environ = dict[str, Any]

class _Body:
    """A WSGI response body over a generator, whose ``close`` always runs ``on_close``
    (even when the server never started iterating)."""

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], None]) -> None:
        self._chunks = chunks
        self._on_close: Callable[[], None] | None = on_close

    def __iter__(self) -> _Body:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close()


#: How often a quiet SSE stream looks at its client's socket (when the server exposes it).
_PEER_CHECK: Final = 0.5


def _peer_gone(sock: Any) -> bool:
    """Whether the client closed its end of the connection (EOF is readable, no data)."""
    import socket

    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"")
    except (BlockingIOError, InterruptedError):
        return False
    except (ValueError, AttributeError, TypeError):
        return False  # cannot tell (a TLS socket refuses MSG_PEEK): wait for the keep-alive
    except OSError:
        return True  # reset, or closed


def _peer_probe(environ: Environ) -> Callable[[], bool] | None:
    """A check of whether the client has left, where the WSGI server offers one: the socket
    (werkzeug, gunicorn), or waitress's ``client_disconnected`` (which only ever says so
    when waitress reads ahead: ``channel_request_lookahead`` of 1 or more)."""
    sock = environ.get("werkzeug.socket") or environ.get("gunicorn.socket")
    if sock is not None:
        return lambda: _peer_gone(sock)
    check = environ.get("waitress.client_disconnected")
    if callable(check):
        return lambda: bool(check())
    return None


def _has_answer(events: list[tuple[str, bytes]], request_id: object) -> bool:
    """Whether stored ``events`` include the response to ``request_id``."""
    for _, data in events:
        try:
            message = json.loads(data) if data else None
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == request_id and (
                "result" in message or "error" in message):
            return True
    return False
