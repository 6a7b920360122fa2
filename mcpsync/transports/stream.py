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
from typing import IO

from ..errors import INVALID_REQUEST, ConnectionClosedError
from ..protocol import jsonrpc
from ..protocol.framing import DEFAULT_MAX_LINE_BYTES, OVERSIZED, LineDecoder
from ..protocol.jsonrpc import ErrorResponse, Invalid, Message, RequestId
from .base import Received

_READ_SIZE = 65536


class StreamTransport:
    """Messages over ``read_fd`` (in) and ``writer`` (out). ``receive`` is for one thread."""

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
        while not self._ready:
            if self._eof or self._closed:
                return None
            if not self._wait_readable():
                return None
            try:
                chunk = os.read(self._fd, _READ_SIZE)
            except OSError:
                chunk = b""
            frames = self._decoder.feed(chunk) if chunk else self._decoder.finish()
            if not chunk:
                self._eof = True
            for frame in frames:
                self._ready.extend(self._decode(frame))
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

    def _wait_readable(self) -> bool:
        """Block until input is ready; False when :meth:`close` woke us instead."""
        poller = self._poller
        if poller is None:
            return True
        while True:
            try:
                events = poller.poll()
            except InterruptedError:
                continue
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
