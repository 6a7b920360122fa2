"""The in-process event store, the default that makes a handshake-era SSE stream resumable
with ``Last-Event-ID``. The contract it keeps, :class:`EventStore`, is in
:mod:`mcpsync.stores.events` (and stays importable here); the store is pluggable (share one
across processes if clients may reconnect to another worker, as ``RedisEventStore``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque

from ..protocol.decoding import parse_decimal
from ..stores.events import EventStore, EventStoreCapabilities

__all__ = ["DEFAULT_MAX_BYTES", "EventStore", "InMemoryEventStore"]


#: The default bound of :class:`InMemoryEventStore`, in bytes of stored JSON.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


class InMemoryEventStore:
    r"""A bounded in-process store. Thread-safe.

    Bounded first in bytes (``max_bytes``, the JSON of the stored messages: 16 MiB by
    default), then in the newest ``max_events_per_stream`` events of the most recent
    ``max_streams`` streams. Whatever exceeds a bound is evicted oldest first, whole streams
    before the newest stream's own events; a single event larger than ``max_bytes`` is not
    kept at all (its stream cannot be resumed past it). The app also calls :meth:`forget` on a
    stream as soon as no resume can need it (its answer went out whole, or its session
    ended), so in steady state the store holds only interrupted streams.
    """

    def __init__(self, max_streams: int = 1024, max_events_per_stream: int = 256, *,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        self._max_streams = max_streams
        self._max_events = max_events_per_stream
        self.max_bytes = max_bytes
        # stream id -> (next sequence number, events); oldest stream first.
        self._streams: OrderedDict[str, tuple[list[int], deque[tuple[int, bytes]]]] = (
            OrderedDict())
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> EventStoreCapabilities:
        """It forgets a stream at once (:meth:`forget`)."""
        return EventStoreCapabilities(forgets=self)

    @property
    def size_bytes(self) -> int:
        """Bytes of event data held now (what ``max_bytes`` bounds)."""
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        """Streams held now."""
        with self._lock:
            return len(self._streams)

    def store_event(self, stream_id: str, data: bytes) -> str:
        if "_" in stream_id:
            raise ValueError("stream ids must not contain '_'")
        with self._lock:
            entry = self._streams.get(stream_id)
            if entry is None:
                entry = ([0], deque())
                self._streams[stream_id] = entry
                while len(self._streams) > self._max_streams:
                    self._drop_oldest_stream()
            else:
                self._streams.move_to_end(stream_id)
            counter, events = entry
            counter[0] += 1
            if len(data) <= self.max_bytes:
                events.append((counter[0], data))
                self._bytes += len(data)
                while len(events) > self._max_events:
                    self._bytes -= len(events.popleft()[1])
                while self._bytes > self.max_bytes and len(self._streams) > 1:
                    self._drop_oldest_stream()
                while self._bytes > self.max_bytes and events:
                    self._bytes -= len(events.popleft()[1])
            return f"{stream_id}_{counter[0]}"

    def _drop_oldest_stream(self) -> None:
        _, (_, events) = self._streams.popitem(last=False)
        self._bytes -= sum(len(data) for _, data in events)

    def events_after(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream_id, _, seq_text = last_event_id.rpartition("_")
        seq = parse_decimal(seq_text)
        if not stream_id or seq is None:
            return None
        with self._lock:
            entry = self._streams.get(stream_id)
            if entry is None:
                return None
            later = [(f"{stream_id}_{n}", data) for n, data in entry[1] if n > seq]
        return stream_id, later

    def forget(self, stream_id: str) -> None:
        """Drop a stream's events (no resume can need them any more)."""
        with self._lock:
            entry = self._streams.pop(stream_id, None)
            if entry is not None:
                self._bytes -= sum(len(data) for _, data in entry[1])
