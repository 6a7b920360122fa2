"""The development server behind :func:`mcpsync.http.serve` and ``mcpsync serve``.

werkzeug's threaded server with the bounds it lacks: without them 300 connections that send
their headers one byte at a time hold 300 threads for as long as they like.

* **timeout** (seconds): a request's line and headers must arrive within it, counted from
  when the server starts waiting for them (werkzeug answers one request per connection, so
  this is also the longest an idle connection is kept); after the headers, any single read
  of the body or write of the response that stalls that long ends the connection. Waiting
  for the application (a long tool call, a quiet SSE stream) is not limited.
* **max_connections**: connections served at once, one named thread each; one more is
  answered ``503`` and closed at once, on the accepting thread, without a thread of its own.
"""

from __future__ import annotations

import io
import itertools
import socket
import threading
import time
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 256

_BUSY_BODY = b"too many connections at once"
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
         b"Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s"
         % (len(_BUSY_BODY), _BUSY_BODY))


class _DeadlineReader(io.RawIOBase):
    """The connection's socket as a raw stream whose every ``recv`` waits at most
    ``timeout`` seconds and, while ``deadline`` is set, never past it. A per-``recv``
    timeout alone does not stop a client that sends one byte just before each expires."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        super().__init__()
        self._sock = sock
        self.timeout = timeout
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wait = self.timeout
        if self.deadline is not None:
            wait = min(wait, self.deadline - time.monotonic())
            if wait <= 0:
                raise TimeoutError("the request line and headers took too long")
        self._sock.settimeout(wait)
        return self._sock.recv_into(buffer)


class DevRequestHandler(WSGIRequestHandler):
    """werkzeug's handler on HTTP/1.1 (streamed responses go out chunked), with a deadline
    for the request head and the server's timeout on every read and write."""

    protocol_version = "HTTP/1.1"
    server: DevServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # socketserver's; ours reads with a deadline
        self._reader = _DeadlineReader(self.connection, self.server.connection_timeout)
        self.rfile = io.BufferedReader(self._reader)
        self.connection.settimeout(self.server.connection_timeout)  # writes

    def handle_one_request(self) -> None:
        # The clock for the request line and headers starts now: it bounds both an idle
        # connection and a slow trickle of header bytes.
        self._reader.deadline = time.monotonic() + self.server.connection_timeout
        try:
            super().handle_one_request()
        finally:
            self._reader.deadline = None

    def parse_request(self) -> bool:
        ok = super().parse_request()
        # Headers are in: the body and the response get the per-operation timeout only.
        self._reader.deadline = None
        self.connection.settimeout(self.server.connection_timeout)
        return ok

    def log_error(self, format: str, *args: Any) -> None:
        if args and isinstance(args[0], TimeoutError):
            return  # a slow or idle client was dropped, as configured: not an error
        super().log_error(format, *args)


class DevServer(ThreadedWSGIServer):
    """A threaded WSGI server with a connection timeout and a cap on connections."""

    def __init__(self, host: str, port: int, app: Any, *, timeout: float = DEFAULT_TIMEOUT,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections!r}")
        self.connection_timeout = timeout  # (BaseServer.timeout is handle_request's)
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        self._connection_threads: set[threading.Thread] = set()
        self._threads_lock = threading.Lock()
        self._numbers = itertools.count(1)
        super().__init__(host, port, app, handler=DevRequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(0)
                request.send(_BUSY)  # a fresh socket's send buffer takes it at once
            except OSError:
                pass
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._serve_connection, args=(request, client_address),
                                  name=f"mcpsync-serve-{next(self._numbers)}", daemon=True)
        with self._threads_lock:
            self._connection_threads.add(thread)
        try:
            thread.start()
        except BaseException:
            with self._threads_lock:
                self._connection_threads.discard(thread)
            self._slots.release()
            self.shutdown_request(request)
            raise

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._threads_lock:
                self._connection_threads.discard(threading.current_thread())
            self._slots.release()

    @property
    def connection_count(self) -> int:
        """Connections being served now."""
        with self._threads_lock:
            return len(self._connection_threads)

    def join_connections(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds in all) for the connection threads to end."""
        deadline = time.monotonic() + timeout
        with self._threads_lock:
            threads = list(self._connection_threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
