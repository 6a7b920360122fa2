"""The pieces of an HTTP response body that outlive the WSGI call: a body whose ``close``
always runs its clean-up, and the check of whether the client has left while a stream waits.

They live apart from the app (``wsgi.py``) because they are about the WSGI server and the
client's socket, not about MCP: which server exposes the socket, and how EOF is told from
a quiet peer.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

logger = logging.getLogger(__name__)

Environ = dict[str, Any]


class OpenStreams:
    """How many SSE response bodies of this process are open now (made and not yet cleaned
    up), for the ``mcpsync.server.sse_streams.open`` gauge. Counted here because every
    SSE answer (a POST's stream, a standalone GET, a resume, a 2024-11-05 ``/sse``) is a
    :class:`_Body`, whose clean-up runs exactly once: the count cannot drift. Process-wide,
    not per app, since a body does not know its app. Thread-safe (one lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0

    def count(self) -> int:
        return self._open

    def add(self, delta: int) -> None:
        with self._lock:
            self._open += delta


#: The one count of this process's open SSE bodies.
OPEN_STREAMS: Final = OpenStreams()


class _Body:
    """A WSGI response body over a generator whose clean-up (``on_close``) runs exactly once:
    when the server calls :meth:`close`, when the generator is exhausted or fails, or when
    the server drops the body without closing it.

    PEP 3333 says the server calls ``close``, but servers skip it on some error paths:
    werkzeug's own server, draining the request after the last chunk, skips it when that
    read fails (a client that resets the connection as soon as it has read its answer).
    The clean-up is what lets go of a finished stream's stored events, ends a 2024-11-05
    session and cancels an abandoned 2026-07-28 call, so it must not depend on that.
    Not thread-safe: one server thread iterates and closes a body.
    """

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], None]) -> None:
        self._chunks = chunks
        self._on_close: Callable[[], None] | None = on_close
        OPEN_STREAMS.add(1)  # until _clean_up, which runs exactly once

    def __iter__(self) -> _Body:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._chunks)
        except BaseException:  # exhausted (StopIteration) or failed: nothing more comes
            self._clean_up()
            raise

    def close(self) -> None:
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._clean_up()

    def __del__(self) -> None:
        # Dropped without close (a server's error path): the generator's own finally
        # blocks run as it is collected; the clean-up must too. In CPython this runs on
        # the thread that dropped the last reference, the server's handler thread.
        if self._on_close is not None:
            try:
                self.close()
            except Exception:  # a finalizer must not raise: say it, go on
                logger.exception("closing a dropped response body failed")

    def _clean_up(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            OPEN_STREAMS.add(-1)
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
