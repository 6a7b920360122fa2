"""Server-Sent Events, sans-IO: encode events for a response body, parse them from bytes.

Only what MCP uses: ``data`` (one JSON-RPC message per event), ``id`` (resumption in the
handshake era), ``event`` (the 2024-11-05 ``endpoint``/``message`` events), ``retry`` and
comment lines (keep-alives, ignored by parsers). Follows the WHATWG event-stream rules:
lines end in LF, CRLF or CR; a blank line dispatches; a leading space after the colon is
dropped; an event with no data is not dispatched, but its ``id`` and ``retry`` still count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .decoding import parse_decimal

KEEPALIVE: Final = b":\n\n"


def encode_event(data: str | bytes = b"", *, id: str | None = None, event: str | None = None,
                 retry_ms: int | None = None) -> bytes:
    """One event as bytes. Multi-line ``data`` becomes several ``data:`` lines."""
    parts: list[bytes] = []
    if event is not None:
        parts.append(b"event: " + _field(event) + b"\n")
    if id is not None:
        parts.append(b"id: " + _field(id) + b"\n")
    if retry_ms is not None:
        parts.append(b"retry: %d\n" % int(retry_ms))
    raw = data.encode("utf-8") if isinstance(data, str) else data
    lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    for line in lines:
        parts.append(b"data: " + line + b"\n" if line else b"data:\n")
    parts.append(b"\n")
    return b"".join(parts)


def encode_comment(text: str = "") -> bytes:
    """A comment line: clients ignore it; proxies see traffic (a keep-alive)."""
    return b": " + _field(text) + b"\n\n" if text else KEEPALIVE


def _field(value: str) -> bytes:
    if "\n" in value or "\r" in value:
        raise ValueError(f"an SSE field cannot contain a line break: {value!r}")
    return value.encode("utf-8")


@dataclass(frozen=True)
class Event:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None
    retry_ms: int | None = None


class EventTooLarge(ValueError):
    """An event (or one line of it) exceeds the parser's bound; the stream can not go on."""


#: The default bound on one event, and on one line: the same as a stdio message.
DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024


class SseParser:
    """Feed bytes as they arrive; get whole events back. Not thread-safe (one per stream).

    ``last_event_id`` and ``retry_ms`` keep the latest values seen, as a reconnecting
    client needs them; ``dispatched`` counts the events returned so far.

    Linear in the bytes fed, however they are split: the unfinished line is kept in a
    ``bytearray`` that grows in place, and each byte is searched for a line end once.
    An event or a line longer than ``max_event_bytes`` raises :class:`EventTooLarge` as
    soon as it is that long, not when it ends (a stream that never ends a line).
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no line end
        self._data: list[str] = []
        self._event = ""
        self._id_seen = False
        self._size = 0
        self._max = max_event_bytes
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.dispatched = 0
        self._strip_bom = True
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[Event]:
        """Parse ``chunk``; return the events it completes."""
        if self._strip_bom and chunk:
            pending = bytes(self._buffer) + chunk
            if len(pending) < 3 and b"\xef\xbb\xbf".startswith(pending):
                self._buffer = bytearray(pending)  # maybe the first bytes of a BOM: wait
                return []
            self._buffer = bytearray()
            chunk = pending[3:] if pending.startswith(b"\xef\xbb\xbf") else pending
            self._strip_bom = False
        if self._after_cr and chunk:
            # The previous chunk ended in CR: an LF now is the second half of that CRLF.
            self._after_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        buffer = self._buffer
        buffer += chunk
        events: list[Event] = []
        start = 0
        scan = self._scanned
        length = len(buffer)
        while scan < length:
            cr = buffer.find(b"\r", scan)
            lf = buffer.find(b"\n", scan)
            if cr == -1 and lf == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 == length:
                    self._after_cr = True  # the line is over; skip an LF that may follow
                    end, nxt = cr, cr + 1
                else:
                    end, nxt = cr, cr + 2 if buffer[cr + 1:cr + 2] == b"\n" else cr + 1
            else:
                end, nxt = lf, lf + 1
            event = self._line(bytes(buffer[start:end]))
            if event is not None:
                events.append(event)
            start = scan = nxt
        if start:
            del buffer[:start]  # at most the bytes after the last line end of this chunk
        self._scanned = len(buffer)
        if len(buffer) + self._size > self._max:
            raise EventTooLarge(f"SSE event larger than {self._max} bytes")
        return events

    def _line(self, raw: bytes) -> Event | None:
        if not raw:
            return self._dispatch()
        if raw.startswith(b":"):
            return None
        name, colon, value = raw.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        text = value.decode("utf-8", errors="replace")
        field = name.decode("utf-8", errors="replace")
        if field == "data":
            self._data.append(text)
            self._size += len(value)
            if self._size > self._max:
                raise EventTooLarge(f"SSE event larger than {self._max} bytes")
        elif field == "event":
            self._event = text
        elif field == "id":
            if "\0" not in text:
                self.last_event_id = text
                self._id_seen = True
        elif field == "retry" and (retry := parse_decimal(text, max_digits=9)) is not None:
            self.retry_ms = retry
        return None

    def _dispatch(self) -> Event | None:
        data, event_type = self._data, self._event
        self._data, self._event, self._size = [], "", 0
        id_seen, self._id_seen = self._id_seen, False
        if not data:
            return None
        self.dispatched += 1
        return Event("\n".join(data), event_type or "message",
                     self.last_event_id if id_seen or self.last_event_id else None,
                     self.retry_ms)
