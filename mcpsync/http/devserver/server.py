"""The development server behind :func:`mcpsync.http.serve` and ``mcpsync serve``.

A slow client must not shut out the others: with a thread per connection, 300 connections
that send their headers one byte at a time hold 300 threads, and a cap on threads then
refuses every real request. So the work is split by what it waits on:

* **one reader thread** (the one in :meth:`DevServer.serve_forever`; see
  :mod:`.reader`) accepts every connection and reads each request's head and body
  with ``selectors``. A connection costs a buffer there, not a thread. Each request has a
  :class:`~mcpsync.protocol.deadline.Deadline` of ``timeout`` seconds for its head *and*
  body together (trickling bytes does not extend it); past it: ``408`` and closed. An
  idle keep-alive connection gets the same, then is closed. Bad or too large framing
  (``Content-Length: -1``, over the app's ``max_body_bytes``) is refused before the body
  is read. Waiting connections are bounded too (``max_waiting``, ``max_waiting_bytes``):
  past either, the oldest is dropped first.
* **a pool of handler threads** (:mod:`.pool`, at most ``max_connections``) runs the
  application on a request that has arrived in full (werkzeug's request handling over
  the buffered bytes: :mod:`.handler`). A full pool means ``503`` at once. A handler
  keeps its thread while the application runs and while it streams (SSE); a write that
  stalls ``timeout`` seconds ends the connection. A keep-alive connection then goes back
  to the reader for its next request.

The access log (werkzeug's format, on the ``werkzeug`` logger) never holds a credential:
see :mod:`mcpsync.protocol.redact`.
"""

from __future__ import annotations

import socket
import sys
import threading
from importlib.metadata import version
from typing import Any, Final

from werkzeug._internal import _log

from ...protocol.redact import redact
from .handler import BufferedRequestHandler
from .pool import HandlerPool
from .reader import ConnectionReader

DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_MAX_CONNECTIONS: Final = 256
#: Connections being read or idle between requests, and their buffered bytes in all.
DEFAULT_MAX_WAITING: Final = 1024
DEFAULT_MAX_WAITING_BYTES: Final = 64 * 1024 * 1024
#: The body bound when the application does not say (``McpWsgiApp.max_body_bytes``).
DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
_BACKLOG: Final = 1024


class DevServer:
    """An HTTP/1.1 server for a WSGI ``app``: one reader thread, a bounded handler pool.

    ``timeout``: seconds for a request's head and body to arrive (counted from the
    connection's accept, or from the end of the previous response on a kept connection),
    and for any one write of the response. ``max_connections``: requests being served at
    once (a handler thread each); one more is answered 503. ``max_body_bytes``: a larger
    body is refused (413) unread; by default the app's ``max_body_bytes`` or 4 MiB.
    """

    # What werkzeug's request handler reads from its server.
    ssl_context = None
    multithread = True
    multiprocess = False
    passthrough_errors = False

    def __init__(self, host: str, port: int, app: Any, *, timeout: float = DEFAULT_TIMEOUT,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 max_body_bytes: int | None = None,
                 max_waiting: int = DEFAULT_MAX_WAITING,
                 max_waiting_bytes: int = DEFAULT_MAX_WAITING_BYTES) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections!r}")
        if max_waiting < 1 or max_waiting_bytes < 1:
            raise ValueError("max_waiting and max_waiting_bytes must be at least 1")
        if max_body_bytes is None:
            max_body_bytes = int(getattr(app, "max_body_bytes", DEFAULT_MAX_BODY))
        self.app = app
        self.connection_timeout = timeout
        self.max_connections = max_connections
        self.closing = False
        self._server_version = f"Werkzeug/{version('werkzeug')}"
        self.socket = _listen(host, port)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self.server_port = self.server_address[1]
        self._pool = HandlerPool(max_connections, "mcpsync-serve")
        self._reader = ConnectionReader(
            self.socket, self._dispatch, timeout=timeout, max_body=max_body_bytes,
            max_waiting=max_waiting, max_waiting_bytes=max_waiting_bytes,
            log=lambda line: self.log("info", "%s", line))
        self._closed = False
        self._close_lock = threading.Lock()

    # -- the life cycle (socketserver's names, which callers and tests use) ------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept and read requests on this thread until :meth:`shutdown` (or an
        exception, such as ``KeyboardInterrupt``, which propagates)."""
        self._reader.run(poll_interval)

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (from another thread) and wait until it has."""
        self._reader.stop(self.connection_timeout + 5.0)

    def server_close(self) -> None:
        """Close the listening socket and every waiting connection; refuse new work.
        Requests being served finish (see :meth:`join_connections`)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self.closing = True
        self._pool.close()
        self._reader.close()
        self.socket.close()

    @property
    def connection_count(self) -> int:
        """Requests being served now (each on a handler thread)."""
        return self._pool.busy

    @property
    def waiting_count(self) -> int:
        """Connections being read, or idle between requests (no thread)."""
        return self._reader.waiting

    def join_connections(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds in all) for the handler threads to end."""
        self._pool.join(timeout)

    def log(self, type: str, message: str, *args: Any) -> None:
        """A line in werkzeug's log, credentials redacted."""
        _log(type, "%s", redact(message % args if args else message))

    # -- a request, on a handler thread ---------------------------------------------------------

    def _dispatch(self, sock: socket.socket, address: Any, request: bytes,
                  leftover: bytes) -> bool:
        return self._pool.submit(lambda: self._answer(sock, address, request, leftover))

    def _answer(self, sock: socket.socket, address: Any, request: bytes,
                leftover: bytes) -> None:
        keep = False
        try:
            # Blocking, with no timeout: the app's peek at whether the client left must not
            # wait (see DeadlineWriter, which bounds each write instead).
            sock.settimeout(None)
            handler = BufferedRequestHandler(request, sock, address, self)
            keep = handler.answer() and not self.closing
        except Exception as exc:  # the handler logs application errors itself
            self.log("error", "the development server failed on a request: %r", exc)
        if keep:
            sock.setblocking(False)
            self._reader.give_back(sock, address, leftover)
            return
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        sock.close()


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host`` and ``port``: IPv6 when ``host`` is an IPv6
    address, else IPv4 (so ``localhost`` is 127.0.0.1, as on werkzeug's server)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    address = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM,
                                 flags=socket.AI_PASSIVE)[0][4]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


__all__ = ["DEFAULT_MAX_CONNECTIONS", "DEFAULT_TIMEOUT", "DevServer"]
