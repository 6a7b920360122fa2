"""Newline-delimited JSON framing for stdio (and any byte stream).

:class:`LineDecoder` turns arbitrary chunks of bytes into complete lines. A line longer
than ``max_line_bytes`` is not buffered whole: its bytes are dropped as they arrive and a
single :data:`OVERSIZED` marker stands in for it, so a hostile 64 MiB line costs no more
memory than the limit and the stream stays in sync at the next newline.
"""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_LINE_BYTES: Final = 16 * 1024 * 1024


class _Oversized:
    __slots__ = ()

    def __repr__(self) -> str:
        return "OVERSIZED"


OVERSIZED: Final = _Oversized()

Frame = bytes | _Oversized


class LineDecoder:
    """Split a byte stream into lines. Not thread-safe: one reader feeds it."""

    __slots__ = ("_buffer", "_discarding", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, chunk: bytes) -> list[Frame]:
        """Add bytes; return every line they complete (without the newline, ``\\r`` stripped)."""
        frames: list[Frame] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                break
            if self._discarding:
                self._discarding = False
            else:
                piece = chunk[start:newline]
                if len(self._buffer) + len(piece) > self.max_line_bytes:
                    frames.append(OVERSIZED)
                else:
                    if self._buffer:
                        self._buffer += piece
                        line = bytes(self._buffer)
                        self._buffer.clear()
                    else:
                        line = piece
                    line = line.rstrip(b"\r")
                    if line.strip():
                        frames.append(line)
            self._buffer.clear()
            start = newline + 1
        rest = chunk[start:]
        if rest and not self._discarding:
            if len(self._buffer) + len(rest) > self.max_line_bytes:
                self._buffer.clear()
                self._discarding = True
                frames.append(OVERSIZED)
            else:
                self._buffer += rest
        return frames

    def finish(self) -> list[Frame]:
        """At end of stream: a last line without a trailing newline still counts."""
        if self._discarding or not self._buffer.strip():
            self._buffer.clear()
            return []
        line = bytes(self._buffer).rstrip(b"\r")
        self._buffer.clear()
        return [line]
