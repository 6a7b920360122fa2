"""The development server's one reader: accepts connections and reads each request's head
and body, all on one thread with ``selectors``, and hands a request to a handler thread
only once it has arrived in full.

Why: a thread per connection lets 300 clients that trickle their headers one byte at a time
hold 300 threads, and the cap on them then shuts out everyone else. Here a connection that
is still sending costs a buffer, not a thread, and has a :class:`Deadline` for its whole
request (head and body), counted from when it was accepted or was given back after a
keep-alive response: trickling does not extend it. Past it the connection gets ``408``
(if it had sent anything) and is closed.

The connections waiting here have bounds of their own, larger than the handler cap:
``max_waiting`` connections and ``max_waiting_bytes`` buffered in all; past either, the
oldest waiting connection (the one nearest its deadline: the slowest) is dropped first.
A request whose framing is bad or too large is answered (400, 413, 431, 501) before its
body is read, and the connection is then drained briefly into a scratch buffer, never
kept, so the client can read the answer instead of a reset.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import json
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from ...errors import INVALID_REQUEST
from ...protocol.deadline import Deadline
from .framing import ChunkedScanner, Framing, FramingError, framing, head_end

#: A request has arrived in full: ``dispatch(sock, address, request_bytes, leftover)``
#: returns whether a handler took it (``False``: all are busy, the reader answers 503).
Dispatch = Callable[[socket.socket, Any, bytes, bytes], bool]
#: ``log(message)``: one line for the server's log (already free of credentials).
Log = Callable[[str], None]

_READ: Final = 65536
#: After a refusal, what is read and thrown away so the client sees the answer.
_DRAIN_BYTES: Final = 1024 * 1024
_DRAIN_SECONDS: Final = 1.0
_ACCEPTS_PER_WAKE: Final = 64


def _reply(status: int, reason: str, text: str, *, retry_after: bool = False) -> bytes:
    body = text.encode()
    extra = b"Retry-After: 1\r\n" if retry_after else b""
    return (b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\n%sConnection: close\r\n\r\n%s"
            % (status, reason.encode(), len(body), extra, body))


def _refusal(status: int, reason: str, message: str) -> bytes:
    """A refusal with a JSON-RPC error body (-32600), as the MCP app answers bad framing."""
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": INVALID_REQUEST, "message": message}}).encode()
    return (b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (status, reason.encode(), len(body), body))


BUSY: Final = _reply(503, "Service Unavailable", "too many connections at once",
                     retry_after=True)
_TIMED_OUT: Final = _refusal(408, "Request Timeout",
                             "Request timeout: the request did not arrive in full in time")
_CUT_SHORT: Final = _refusal(400, "Bad Request",
                             "Bad request: the connection ended before the request did")


class _Waiting:
    """A connection the reader owns: its buffer, its request deadline, how far its head
    and body have been found."""

    __slots__ = ("address", "buffer", "deadline", "drain_left", "framing",
                 "head_len", "number", "scanner", "searched", "sock")

    def __init__(self, sock: socket.socket, address: Any, deadline: Deadline,
                 number: int, leftover: bytes = b"") -> None:
        self.sock = sock
        self.address = address
        self.deadline = deadline
        self.number = number  # order of arrival: the oldest is dropped first
        self.buffer = bytearray(leftover)
        self.searched = 0
        self.head_len: int | None = None
        self.framing: Framing | None = None
        self.scanner: ChunkedScanner | None = None
        self.drain_left: int | None = None  # set once refused: bytes still to discard


class ConnectionReader:
    """The selector loop (:meth:`run`) and the connections waiting in it.

    Thread-safe entry points: :meth:`give_back` (a handler thread returns a keep-alive
    connection) and :meth:`stop`; everything else runs on the thread in :meth:`run`.
    """

    def __init__(self, listener: socket.socket, dispatch: Dispatch, *, timeout: float,
                 max_body: int, max_waiting: int, max_waiting_bytes: int,
                 log: Log) -> None:
        self._listener = listener
        self._dispatch = dispatch
        self._timeout = timeout
        self._max_body = max_body
        self._max_waiting = max_waiting
        self._max_waiting_bytes = max_waiting_bytes
        self._log = log
        self._selector = selectors.DefaultSelector()
        self._waiting: dict[socket.socket, _Waiting] = {}
        self._buffered = 0
        self._expiry: list[tuple[float, int, _Waiting]] = []  # a heap; stale rows skipped
        self._numbers = itertools.count()
        self._scratch = bytearray(_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._returned: list[tuple[socket.socket, Any, bytes]] = []
        self._lock = threading.Lock()  # guards _returned and _stopping
        self._stopping = False
        self._stopped = threading.Event()
        self._stopped.set()
        self._accept_paused_until = 0.0
        listener.setblocking(False)
        self._selector.register(listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)

    # -- thread-safe -----------------------------------------------------------------------

    @property
    def waiting(self) -> int:
        """Connections being read or idle between requests (approximate from other threads)."""
        return len(self._waiting)

    def give_back(self, sock: socket.socket, address: Any, leftover: bytes) -> None:
        """A handler answered a request on ``sock`` and the connection stays open: read
        its next request (``leftover``: bytes of it that were read already)."""
        with self._lock:
            if not self._stopping:
                self._returned.append((sock, address, leftover))
                sock = None  # type: ignore[assignment]
        if sock is not None:
            sock.close()
            return
        self._wake()

    def stop(self, timeout: float | None = None) -> None:
        """Ask :meth:`run` to return, and wait (at most ``timeout`` s) until it has."""
        with self._lock:
            self._stopping = True
        self._wake()
        self._stopped.wait(timeout)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # already woken (the pipe is full), or closed at shutdown

    # -- the loop ---------------------------------------------------------------------------

    def run(self, poll_interval: float = 0.5) -> None:
        """Accept and read until :meth:`stop`; runs on the calling thread. An exception
        (``KeyboardInterrupt`` in ``select``) propagates; :meth:`close` cleans up."""
        self._stopped.clear()
        try:
            while True:
                with self._lock:
                    if self._stopping:
                        return
                self._resume_accepting()
                wait = poll_interval
                if self._expiry:
                    wait = min(wait, max(0.0, self._expiry[0][0] - _now()))
                for key, _ in self._selector.select(wait):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._take_returned()
                    else:
                        waiting = self._waiting.get(key.fileobj)  # type: ignore[call-overload]
                        if waiting is not None:
                            self._read(waiting)
                self._expire()
        finally:
            with self._lock:
                self._stopping = False
            self._stopped.set()

    def close(self) -> None:
        """Close every waiting connection, the selector and the wake-up pair (the listener
        is its owner's). Call once :meth:`run` has returned."""
        with self._lock:
            self._stopping = True
            returned, self._returned = self._returned, []
        for sock, _, _ in returned:
            sock.close()
        for waiting in list(self._waiting.values()):
            self._drop(waiting)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- accepting ----------------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(_ACCEPTS_PER_WAKE):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    if not self._drop_oldest():  # free a descriptor, or pause a moment
                        self._pause_accepting()
                        return
                    continue
                return  # ECONNABORTED and friends: that one client is gone
            if len(self._waiting) >= self._max_waiting:
                self._drop_oldest()
            sock.setblocking(False)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            self._add(sock, address, b"")

    def _pause_accepting(self) -> None:
        self._accept_paused_until = _now() + 0.1
        self._selector.unregister(self._listener)

    def _resume_accepting(self) -> None:
        if self._accept_paused_until and _now() >= self._accept_paused_until:
            self._accept_paused_until = 0.0
            self._selector.register(self._listener, selectors.EVENT_READ)

    def _take_returned(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        with self._lock:
            returned, self._returned = self._returned, []
        for sock, address, leftover in returned:
            waiting = self._add(sock, address, leftover)
            if waiting is not None and leftover:
                self._advance(waiting)

    def _add(self, sock: socket.socket, address: Any, leftover: bytes) -> _Waiting | None:
        deadline = Deadline(self._timeout, "the request head and body")
        waiting = _Waiting(sock, address, deadline, next(self._numbers), leftover)
        try:
            self._selector.register(sock, selectors.EVENT_READ)
        except (ValueError, OSError):
            sock.close()
            return None
        self._waiting[sock] = waiting
        self._buffered += len(leftover)
        heapq.heappush(self._expiry, (deadline.at, waiting.number, waiting))
        return waiting

    # -- reading ---------------------------------------------------------------------------

    def _read(self, waiting: _Waiting) -> None:
        if waiting.drain_left is not None:
            self._discard(waiting)
            return
        try:
            data = waiting.sock.recv(_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(waiting)
            return
        if not data:  # the client closed, or half-closed (between requests, or mid-request)
            if waiting.buffer.strip(b"\r\n"):
                _send_quietly(waiting.sock, _CUT_SHORT)
            self._drop(waiting)
            return
        waiting.buffer += data
        self._buffered += len(data)
        self._advance(waiting)
        while self._buffered > self._max_waiting_bytes and self._drop_oldest():
            pass

    def _advance(self, waiting: _Waiting) -> None:
        """Look at what has arrived: refuse, hand over, or wait for more."""
        try:
            end = self._request_end(waiting)
        except FramingError as exc:
            self._refuse(waiting, _refusal(exc.status, exc.reason, exc.message), exc)
            return
        if end is None:
            return
        request = bytes(waiting.buffer[:end])
        leftover = bytes(waiting.buffer[end:])
        self._forget(waiting)
        sock = waiting.sock
        try:
            sock.setblocking(True)
            taken = self._dispatch(sock, waiting.address, request, leftover)
        except Exception:
            taken = False
        if not taken:
            _send_and_close(sock, BUSY)

    def _request_end(self, waiting: _Waiting) -> int | None:
        """Where the buffered request ends, or ``None`` if it has not all arrived."""
        buffer = waiting.buffer
        if waiting.head_len is None:
            skipped = len(buffer) - len(buffer.lstrip(b"\r\n"))
            if skipped:  # empty lines before a request line are allowed (RFC 9112 §2.2)
                del buffer[:skipped]
                self._buffered -= skipped
            end = head_end(buffer, waiting.searched)
            if end is None:
                waiting.searched = len(buffer)
                return None
            waiting.head_len = end
            waiting.framing = framing(bytes(buffer[:end]), self._max_body)
            if waiting.framing.chunked:
                waiting.scanner = ChunkedScanner(end, self._max_body)
            if waiting.framing.expect_continue and (waiting.framing.length or
                                                    waiting.framing.chunked):
                _send_quietly(waiting.sock, b"HTTP/1.1 100 Continue\r\n\r\n")
        if waiting.scanner is not None:
            if len(buffer) - waiting.head_len > 2 * self._max_body + _READ:
                # Tiny chunks: the framing alone may not cost more than the body may.
                raise FramingError(413, "Content Too Large",
                                   f"Request body larger than {self._max_body} bytes")
            return waiting.scanner.end(buffer)
        assert waiting.framing is not None
        end = waiting.head_len + waiting.framing.length
        return end if len(buffer) >= end else None

    def _refuse(self, waiting: _Waiting, reply: bytes, exc: FramingError) -> None:
        """Answer ``reply`` and close, reading (and discarding) only a little more."""
        first = bytes(waiting.buffer[:200]).split(b"\n", 1)[0].rstrip(b"\r")
        line = "".join(c if c.isprintable() else "?" for c in first.decode("latin-1"))
        self._log(f'"{line}" {exc.status} - ({exc.message})')
        _send_quietly(waiting.sock, reply)
        try:
            waiting.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._buffered -= len(waiting.buffer)
        waiting.buffer = bytearray()
        waiting.drain_left = _DRAIN_BYTES
        drain_until = Deadline(_DRAIN_SECONDS).at
        if drain_until < waiting.deadline.at:
            waiting.deadline = Deadline(None, "draining", at=drain_until)
            heapq.heappush(self._expiry, (drain_until, waiting.number, waiting))

    def _discard(self, waiting: _Waiting) -> None:
        try:
            read = waiting.sock.recv_into(self._scratch)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            read = 0
        assert waiting.drain_left is not None
        waiting.drain_left -= read
        if not read or waiting.drain_left <= 0:
            self._drop(waiting)

    # -- ending ------------------------------------------------------------------------------

    def _expire(self) -> None:
        now = _now()
        while self._expiry and self._expiry[0][0] <= now:
            at, _, waiting = heapq.heappop(self._expiry)
            if self._waiting.get(waiting.sock) is not waiting or waiting.deadline.at != at:
                continue  # handed over, closed, or given a new deadline since
            if waiting.drain_left is None and waiting.buffer.strip(b"\r\n"):
                _send_quietly(waiting.sock, _TIMED_OUT)  # it had started a request
            self._drop(waiting)

    def _drop_oldest(self) -> bool:
        """Close the waiting connection that arrived first; ``False`` if none waits."""
        while self._expiry:
            at, _, waiting = heapq.heappop(self._expiry)
            if self._waiting.get(waiting.sock) is waiting and waiting.deadline.at == at:
                self._drop(waiting)
                return True
        return False

    def _forget(self, waiting: _Waiting) -> None:
        """Stop watching ``waiting`` (its socket stays open: it is handed over)."""
        if self._waiting.pop(waiting.sock, None) is None:
            return
        self._buffered -= len(waiting.buffer)
        try:
            self._selector.unregister(waiting.sock)
        except (KeyError, ValueError):
            pass

    def _drop(self, waiting: _Waiting) -> None:
        self._forget(waiting)
        waiting.sock.close()


def _now() -> float:
    return time.monotonic()


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    """Send a short reply without blocking; a client that cannot take it loses it."""
    try:
        sock.send(data)
    except OSError:
        pass


def _send_and_close(sock: socket.socket, data: bytes) -> None:
    sock.setblocking(False)
    _send_quietly(sock, data)
    sock.close()


__all__ = ["BUSY", "ConnectionReader"]
