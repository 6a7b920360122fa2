"""A transport over a pair of byte streams with newline-delimited JSON framing.

Used for both sides of stdio: the server reads its stdin and writes its stdout; the client
reads a child process's stdout and writes its stdin. Reads use ``os.read`` on the file
descriptor (whatever bytes the pipe has, up to 64 KiB) and the sans-IO
:class:`~mcpsync.protocol.decoding.LineDecoder`, so a burst of small messages costs one
system call, not one per line.

Writes go through :class:`PipeWriter`: each message by a deadline, the caller's
(:meth:`StreamTransport.send_call`, the engine's
:class:`~mcpsync.transports.base.CallControl` seam) or ``write_timeout``; a stream whose
peer stopped reading ends instead of blocking for ever. Why: a blocking write to a pipe
whose reader has stopped reading waits for ever once the pipe is full (64 KiB on Linux): a
stdio server that stops reading its stdin used to hang ``call_tool(..., timeout=2)``, and
every later write queued behind it. So the descriptor is made non-blocking (pipes and
sockets: a terminal or a file is never left waiting on a peer) and a message the pipe does
not take at once is written as the pipe drains, each wait in ``poll()`` with what is left
of the message's deadline.

A message cut short can not be taken back: the peer would read half a JSON line, with the
next message glued to it. So when a deadline passes:

- nothing of the message written, and the deadline is the caller's (a request, a
  cancellation): :class:`~mcpsync.protocol.deadline.DeadlineExceeded`, and the stream is
  as it was;
- part of it written, or the write had no caller's deadline (an answer, a notification:
  it is owed, or the peer is no longer listening): the writer ends
  (:attr:`PipeWriter.stalled` says why) and the write raises ``ConnectionClosedError``. A
  write without a caller's deadline has ``write_timeout`` (:data:`WRITE_TIMEOUT`, 30 s) for
  the whole message, its turn included: a peer that does not take it in that long is
  treated as gone.

The hot path is unchanged: a message the pipe takes at once is one ``os.write``. Without
``select.poll`` (Windows), writes block as before and have no deadline. Writes are
serialized by the writer's lock (each waiting for it within its deadline), so ``send`` is
thread-safe.
"""

from __future__ import annotations

import collections
import io
import math
import os
import select
import stat
import threading
import time
from collections.abc import Callable
from typing import IO

from ..errors import INVALID_REQUEST, ConnectionClosedError
from ..protocol import jsonrpc
from ..protocol.deadline import Deadline
from ..protocol.decoding import DEFAULT_MAX_LINE_BYTES, OVERSIZED, LineDecoder
from ..protocol.jsonrpc import (
    ErrorResponse,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from .base import Received

#: How long a message written without a caller's deadline (an answer, a notification) may
#: take to go out, waiting for its turn included; then the peer is treated as gone.
WRITE_TIMEOUT = 30.0
_READ_SIZE = 65536
#: How much of the first line that is not a JSON-RPC message is kept (see ``first_invalid``).
_INVALID_SAMPLE_BYTES = 200
#: How long close() waits for a write in progress to leave the descriptor (it is woken).
_CLOSE_WAIT = 1.0


class StreamTransport:
    """Messages over ``read_fd`` (in) and ``writer`` (out). ``receive`` and
    :meth:`receive_within` are for one thread at a time (the engine's reader, or a caller
    it lends the stream to: ``engine/reading.py``); ``send``, ``send_call`` and ``close``
    are thread-safe.

    ``write_timeout``: how long a message sent without a caller's deadline may take to be
    written before ``peer`` (who reads ``writer``: named in the errors) is treated as gone.
    """

    def __init__(
        self,
        read_fd: int,
        writer: IO[bytes],
        *,
        max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
        allow_batches: bool = False,
        write_timeout: float = WRITE_TIMEOUT,
        peer: str = "the peer",
    ) -> None:
        self._fd = read_fd
        self._decoder = LineDecoder(max_message_bytes)
        self._ready: collections.deque[Received] = collections.deque()
        self._eof = False
        self._closed = False  # by close() or by a write that ran out of time
        self._released = False  # close() has run
        #: Set while bytes read from the descriptor are not yet decoded: an exception raised
        #: into the reading thread then (KeyboardInterrupt, a signal handler's) loses them,
        #: and the stream can not be trusted again.
        self._torn = False
        self.allow_batches = allow_batches
        #: The start of the first line read that was not a JSON-RPC message (bounded), or
        #: None: when the peer then ends, it says what the peer was (``echo hello`` is a
        #: program, not an MCP server).
        self.first_invalid: bytes | None = None
        self._ended = threading.Event()  # set at the end of input, and by close()
        #: Held while reading: the one reader (see the class) against :meth:`read_to_end`.
        self._reading = threading.Lock()
        # A self-pipe lets close() wake a reader blocked on a descriptor it does not own.
        self._wake_r, self._wake_w = os.pipe() if hasattr(select, "poll") else (-1, -1)
        self._poller: select.poll | None = None
        if self._wake_r >= 0:  # made once: receive() runs once per burst of input
            self._poller = select.poll()
            self._poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            self._poller.register(self._wake_r, select.POLLIN)
        self._out = PipeWriter(writer, self._wake_r, write_timeout=write_timeout,
                               on_stall=self._stall, peer=peer)

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        """Write ``message`` within ``write_timeout``; ``ConnectionClosedError`` when the
        stream is closed, or ends because the peer did not take it in time."""
        self._out.write(jsonrpc.encode(message) + b"\n", None, message)

    def send_call(self, message: Message, deadline: Deadline,
                  related_request_id: RequestId | None = None) -> None:
        """:class:`~mcpsync.transports.base.CallControl`: write ``message`` by the caller's
        ``deadline``. ``DeadlineExceeded`` when not a byte of it could be written in time
        (the stream lives on); ``ConnectionClosedError`` when it was cut short (the stream
        ends: the rest can not be taken back)."""
        self._out.write(jsonrpc.encode(message) + b"\n", deadline, message)

    def abandon(self, request_id: RequestId) -> None:
        """:class:`~mcpsync.transports.base.CallControl`: nothing to end, a byte stream
        has no exchange per call."""

    @property
    def orders_writes(self) -> bool:
        """:class:`~mcpsync.transports.base.OrderedWrites`: the writer takes turns."""
        return True

    @property
    def write_timeout(self) -> float:
        """The bound of a write without a caller's deadline (seconds); settable."""
        return self._out.write_timeout

    @write_timeout.setter
    def write_timeout(self, seconds: float) -> None:
        self._out.write_timeout = seconds

    @property
    def writer(self) -> PipeWriter:
        """The write side (a wrapping transport may write through it directly)."""
        return self._out

    @property
    def stalled(self) -> str | None:
        """Why the stream ended itself (its peer stopped reading), or ``None``."""
        return self._out.stalled

    def _stall(self) -> None:
        """A write ran out of time: no more messages either way, and the reader (blocked
        in ``poll``) is told, so that the connection ends with the reason."""
        self._closed = True
        self._wake()

    def receive(self) -> Received | None:
        return self._next(None)

    def receive_within(self, timeout: float) -> Received | None:
        """The next message, waiting at most ``timeout`` seconds for it: raises
        ``TimeoutError`` when no whole message arrived in time; ``None`` at end of stream."""
        return self._next(time.monotonic() + timeout)

    @property
    def pollable(self) -> bool:
        """Whether :meth:`receive_within` can wait with a deadline (``select.poll``: not on
        Windows, where it blocks like :meth:`receive`)."""
        return self._poller is not None

    @property
    def buffered(self) -> bool:
        """Whether messages already read wait to be taken (no read needed for them)."""
        return bool(self._ready)

    def _next(self, deadline: float | None) -> Received | None:
        with self._reading:
            while not self._ready:
                if self._eof or self._closed:
                    if self._out.stalled is not None:
                        raise ConnectionClosedError(self._out.stalled)
                    return None
                if self._torn:
                    raise ConnectionClosedError(
                        "a read of the stream was interrupted part-way (an exception raised "
                        "in the reading thread, such as KeyboardInterrupt): its bytes are lost")
                ready = self._wait_readable(deadline)
                if ready is None:
                    raise TimeoutError("no message within the time given")
                if not ready:
                    return None
                self._read_chunk()
            return self._ready.popleft()

    def _read_chunk(self) -> None:
        """One read, decoded into ``_ready``; the end of input when it is empty."""
        self._torn = True
        try:
            chunk = os.read(self._fd, _READ_SIZE)
        except OSError:
            chunk = b""
        frames = self._decoder.feed(chunk) if chunk else self._decoder.finish()
        for frame in frames:
            self._ready.extend(self._decode(frame))
        self._torn = False
        if not chunk:
            self._eof = True
            self._ended.set()

    def read_to_end(self, timeout: float) -> None:
        """Once the peer is gone: read what it wrote before it went, up to the end of input
        (at most ``timeout`` seconds), until ``first_invalid`` is known. The messages read
        wait to be taken as usual. While another thread reads, leaves the reading to it (it
        may be blocked on the writer that called this: never wait for it long). Not for a
        live peer."""
        deadline = time.monotonic() + timeout
        while self.first_invalid is None and not self._ended.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self._poller is None:  # no poll(): a read could block for good
                return
            if not self._reading.acquire(timeout=min(left, 0.01)):
                continue
            try:
                while not (self._eof or self._closed or self._torn or
                           self.first_invalid is not None):
                    if not self._wait_readable(deadline):
                        return  # out of time (a grandchild holds the pipe open), or closed
                    self._read_chunk()
            finally:
                self._reading.release()

    def _decode(self, frame: bytes | object) -> list[Received]:
        if frame is OVERSIZED:
            reason = f"Invalid request: message exceeds {self._decoder.max_line_bytes} bytes"
            return [Invalid(reason, ErrorResponse(None, {"code": INVALID_REQUEST,
                                                          "message": reason}))]
        assert isinstance(frame, bytes)
        if jsonrpc.is_batch(frame) and not self.allow_batches:
            reason = "Invalid request: JSON-RPC batches are not supported on this transport"
            return [Invalid(reason, ErrorResponse(None, {"code": INVALID_REQUEST,
                                                          "message": reason}))]
        received: list[Received] = list(jsonrpc.decode(frame))
        if self.first_invalid is None:
            for item in received:  # (a loop, not any(): this runs for every message)
                if isinstance(item, Invalid) and item.answer_to is None:
                    self.first_invalid = frame[:_INVALID_SAMPLE_BYTES]
                    break
        return received

    def _wait_readable(self, deadline: float | None) -> bool | None:
        """Block until input is ready (True), :meth:`close` woke us (False) or ``deadline``
        (``time.monotonic()``) passed (None)."""
        poller = self._poller
        if poller is None:
            return True  # no poll(): a plain blocking read (and no deadline)
        while True:
            if deadline is None:
                timeout_ms = None
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                timeout_ms = max(1, int(left * 1000 + 0.999))
            try:
                events = poller.poll(timeout_ms)
            except InterruptedError:
                continue
            if not events:
                continue  # timed out: the top of the loop says whether the deadline passed
            return not any(fd == self._wake_r for fd, _ in events)

    def close(self) -> None:
        """Stop: a blocked :meth:`receive` returns ``None``, a write waiting for room
        raises ``ConnectionClosedError``. Once it returns no write touches ``writer`` (the
        caller may close it). Does not close the descriptors it was given (the caller owns
        them), and gives ``writer``'s back in the blocking mode it had."""
        if self._released:
            return
        self._released = True
        self._closed = True
        self._ended.set()
        self._wake()
        self._out.close(_CLOSE_WAIT)

    def _wake(self) -> None:
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def __del__(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


class PipeWriter:
    """Writes to ``writer``'s descriptor with deadlines. ``wake_fd`` becomes readable when
    the owner closes (it wakes a writer waiting in ``poll``); ``on_stall`` is called (with
    the write lock held: it must only wake the owner's reader) when the writer ends itself.
    ``peer`` names who should read (for the errors)."""

    def __init__(self, writer: IO[bytes], wake_fd: int, *, write_timeout: float,
                 on_stall: Callable[[], None], peer: str) -> None:
        self.write_timeout = write_timeout
        #: Why the writer ended itself (a write ran out of time); ``None`` while it has not.
        self.stalled: str | None = None
        self._writer = writer
        self._on_stall = on_stall
        self._peer = peer
        self._lock = threading.Lock()
        self._closed = False
        self._fd = -1
        self._made_nonblocking = False
        self._poller: select.poll | None = None
        fd = _pollable_fd(writer) if wake_fd >= 0 else -1
        if fd >= 0:
            self._fd = fd
            if os.get_blocking(fd):
                os.set_blocking(fd, False)
                self._made_nonblocking = True
            self._poller = select.poll()
            self._poller.register(fd, select.POLLOUT)
            self._poller.register(wake_fd, select.POLLIN)

    def write(self, data: bytes, deadline: Deadline | None, message: Message) -> None:
        """Write all of ``data`` (``message``, encoded) by ``deadline`` (the caller's; else
        ``write_timeout`` from now). See the module's docstring for what running out does."""
        lock = self._lock
        bound = None if lock.acquire(False) else self._take_turn(len(data), deadline, message)
        try:
            if self._closed:
                raise ConnectionClosedError(self.stalled or "stream is closed")
            fd = self._fd
            if fd < 0:
                try:
                    self._writer.write(data)
                    self._writer.flush()
                except (OSError, ValueError) as exc:
                    raise ConnectionClosedError(f"cannot write: {exc}") from exc
                return
            try:
                done = os.write(fd, data)
            except BlockingIOError:
                done = 0
            except OSError as exc:
                raise ConnectionClosedError(f"cannot write: {exc}") from exc
            if done != len(data):
                self._write_rest(data, done, deadline, bound, message)
        finally:
            lock.release()

    def _take_turn(self, size: int, deadline: Deadline | None, message: Message) -> Deadline:
        """Wait for another write to finish, within the deadline; returns the deadline
        that bounds this write (``write_timeout`` from now when it had none)."""
        bound = deadline if deadline is not None else Deadline(self.write_timeout, "a write")
        left = bound.remaining()
        if not self._lock.acquire(timeout=-1 if left == math.inf else left):
            raise self._ran_out(0, size, deadline, message)
        return bound

    def _write_rest(self, data: bytes, done: int, deadline: Deadline | None,
                    bound: Deadline | None, message: Message) -> None:
        """The slow path: wait for room in the pipe, within the deadline (lock held)."""
        if bound is None:
            bound = deadline if deadline is not None else Deadline(self.write_timeout,
                                                                   "a write")
        poller = self._poller
        assert poller is not None
        view = memoryview(data)
        total = len(data)
        while done < total:
            left = bound.remaining()
            if left <= 0:
                raise self._ran_out(done, total, deadline, message)
            try:
                events = poller.poll(min(int(left * 1000) + 1, 2**31 - 1))
            except InterruptedError:
                continue
            if self._closed:
                raise ConnectionClosedError(self.stalled or "stream is closed")
            if not events:
                continue  # the top of the loop says whether the deadline passed
            try:
                done += os.write(self._fd, view[done:])
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ConnectionClosedError(f"cannot write: {exc}") from exc

    def _ran_out(self, done: int, total: int, deadline: Deadline | None,
                 message: Message) -> Exception:
        """The error for a write whose time ran out, ending the writer unless nothing was
        written and the time was the caller's."""
        if done == 0 and deadline is not None:
            return deadline.exceeded()
        what = describe(message)
        if deadline is not None:
            reason = (f"{self._peer} stopped reading: {what} was cut short when its "
                      f"deadline passed ({done} of {total} bytes written), so the "
                      f"connection was closed (half a message can not be taken back)")
        else:
            reason = (f"{self._peer} stopped reading: {what} could not be written in "
                      f"{self.write_timeout:g} s ({done} of {total} bytes written), so the "
                      f"connection was closed (a peer that does not read for that long is "
                      f"treated as gone)")
        if self.stalled is None:
            self.stalled = reason
        self._closed = True
        self._on_stall()
        return ConnectionClosedError(reason)

    def close(self, wait: float) -> None:
        """No more writes. Call after waking ``wake_fd``: waits up to ``wait`` seconds for a
        write in progress to leave the descriptor (it wakes at once), then gives the
        descriptor back in the blocking mode it had (it may be shared: fd 1's)."""
        self._closed = True
        got = self._lock.acquire(timeout=wait)
        try:
            if self._made_nonblocking:
                self._made_nonblocking = False
                try:
                    os.set_blocking(self._fd, True)
                except OSError:
                    pass
        finally:
            if got:
                self._lock.release()


def describe(message: Message) -> str:
    """A message, for an error that says which one was cut short."""
    if isinstance(message, Request):
        return f"the {message.method} request {message.id!r}"
    if isinstance(message, Notification):
        return f"the {message.method} notification"
    if isinstance(message, (Response, ErrorResponse)):
        return f"the answer to request {message.id!r}"
    return "a message"


def _pollable_fd(writer: IO[bytes]) -> int:
    """``writer``'s descriptor when it is a pipe or a socket that ``poll`` can wait on and
    that is written unbuffered (a ``FileIO``); else -1: plain blocking writes."""
    if not hasattr(select, "poll") or not isinstance(writer, io.FileIO):
        return -1
    try:
        fd = writer.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return -1
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else -1
