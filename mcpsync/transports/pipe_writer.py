"""Writing whole messages to a pipe by a deadline: the write side of stdio.

A blocking write to a pipe whose reader has stopped reading waits for ever once the pipe is
full (64 KiB on Linux): a stdio server that stops reading its stdin used to hang
``call_tool(..., timeout=2)``, and every later write queued behind it. So the descriptor is
made non-blocking (pipes and sockets: a terminal or a file is never left waiting on a
peer) and a message the pipe does not take at once is written as the pipe drains, each
wait in ``poll()`` with what is left of the message's deadline.

A message cut short can not be taken back: the peer would read half a JSON line, with the
next message glued to it. So when a deadline passes:

- nothing of the message written, and the deadline is the caller's (a request, a
  cancellation): :class:`~mcpsync.protocol.deadline.DeadlineExceeded`, and the stream is
  as it was;
- part of it written, or the write had no caller's deadline (an answer, a notification:
  it is owed, or the peer is no longer listening): the writer ends (:attr:`stalled` says
  why) and the write raises ``ConnectionClosedError``. A write without a caller's
  deadline has ``write_timeout`` (:data:`WRITE_TIMEOUT`, 30 s) for the whole message, its
  turn included: a peer that does not take it in that long is treated as gone.

The hot path is unchanged: a message the pipe takes at once is one ``os.write``. Without
``select.poll`` (Windows), writes block as before and have no deadline.

Thread-safe: writes are serialized by a lock, each waiting for it within its deadline.
"""

from __future__ import annotations

import io
import math
import os
import select
import stat
import threading
from collections.abc import Callable
from typing import IO

from ..errors import ConnectionClosedError
from ..protocol.deadline import Deadline
from ..protocol.jsonrpc import ErrorResponse, Message, Notification, Request, Response

#: How long a message written without a caller's deadline (an answer, a notification) may
#: take to go out, waiting for its turn included; then the peer is treated as gone.
WRITE_TIMEOUT = 30.0


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

