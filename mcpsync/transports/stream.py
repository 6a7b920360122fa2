"""A transport over a pair of byte streams with newline-delimited JSON framing.

Used for both sides of stdio: the server reads its stdin and writes its stdout; the client
reads a child process's stdout and writes its stdin. Reads use ``os.read`` on the file
descriptor (whatever bytes the pipe has, up to 64 KiB) and the sans-IO
:class:`~mcpsync.protocol.framing.LineDecoder`, so a burst of small messages costs one
system call, not one per line.
"""

from __future__ import annotations

import collections
import os
import select
import time
from typing import IO

from ..errors import INVALID_REQUEST, ConnectionClosedError
from ..protocol import jsonrpc
from ..protocol.framing import DEFAULT_MAX_LINE_BYTES, OVERSIZED, LineDecoder
from ..protocol.jsonrpc import ErrorResponse, Invalid, Message, RequestId
from .base import Received

_READ_SIZE = 65536


class StreamTransport:
    """Messages over ``read_fd`` (in) and ``writer`` (out). ``receive`` and
    :meth:`receive_within` are for one thread at a time (the engine's reader, or a caller
    it lends the stream to: ``engine/read_role.py``)."""

    def __init__(
        self,
        read_fd: int,
        writer: IO[bytes],
        *,
        max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
        allow_batches: bool = False,
    ) -> None:
        self._fd = read_fd
        self._writer = writer
        self._decoder = LineDecoder(max_message_bytes)
        self._ready: collections.deque[Received] = collections.deque()
        self._eof = False
        self._closed = False
        #: Set while bytes read from the descriptor are not yet decoded: an exception raised
        #: into the reading thread then (KeyboardInterrupt, a signal handler's) loses them,
        #: and the stream can not be trusted again.
        self._torn = False
        self.allow_batches = allow_batches
        # A self-pipe lets close() wake a reader blocked on a descriptor it does not own.
        self._wake_r, self._wake_w = os.pipe() if hasattr(select, "poll") else (-1, -1)
        self._poller: select.poll | None = None
        if self._wake_r >= 0:  # made once: receive() runs once per burst of input
            self._poller = select.poll()
            self._poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            self._poller.register(self._wake_r, select.POLLIN)

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            raise ConnectionClosedError("stream is closed")
        data = jsonrpc.encode(message) + b"\n"
        try:
            self._writer.write(data)
            self._writer.flush()
        except (OSError, ValueError) as exc:
            raise ConnectionClosedError(f"cannot write: {exc}") from exc

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
        while not self._ready:
            if self._eof or self._closed:
                return None
            if self._torn:
                raise ConnectionClosedError(
                    "a read of the stream was interrupted part-way (an exception raised in "
                    "the reading thread, such as KeyboardInterrupt): its bytes are lost")
            ready = self._wait_readable(deadline)
            if ready is None:
                raise TimeoutError("no message within the time given")
            if not ready:
                return None
            self._torn = True
            try:
                chunk = os.read(self._fd, _READ_SIZE)
            except OSError:
                chunk = b""
            frames = self._decoder.feed(chunk) if chunk else self._decoder.finish()
            if not chunk:
                self._eof = True
            for frame in frames:
                self._ready.extend(self._decode(frame))
            self._torn = False
        return self._ready.popleft()

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
        return list(jsonrpc.decode(frame))

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
        """Stop: a blocked :meth:`receive` returns ``None``. Does not close the descriptors
        it was given (the caller owns them)."""
        if self._closed:
            return
        self._closed = True
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
