"""Event stores: what makes a handshake-era SSE stream resumable with ``Last-Event-ID``.

Every event sent on a session's SSE stream is stored under an id that names its stream;
a client that lost the connection sends ``GET`` with ``Last-Event-ID`` and gets the events
of that stream that came after it. The store is pluggable (share one across processes if
clients may reconnect to another worker); :class:`InMemoryEventStore` is the default.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import Protocol


class EventStore(Protocol):
    """Where SSE events wait for a reconnecting client. Implementations must be thread-safe.

    The server calls :meth:`store_event` on the thread that sends the message, under the
    session's write lock, so keep it quick.
    """

    def store_event(self, stream_id: str, data: bytes) -> str:
        """Keep ``data`` (one JSON-RPC message, or ``b""`` for a priming event); return the
        event id, which must identify ``stream_id``."""
        ...

    def events_after(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``last_event_id`` belongs to and its later events in order (ids and
        data), or ``None`` if the id is unknown (or its stream was evicted)."""
        ...


class InMemoryEventStore:
    """A bounded in-process store: the newest ``max_events_per_stream`` events of the most
    recent ``max_streams`` streams. Thread-safe."""

    def __init__(self, max_streams: int = 1024, max_events_per_stream: int = 256) -> None:
        self._max_streams = max_streams
        self._max_events = max_events_per_stream
        self._streams: OrderedDict[str, tuple[list[int], deque[tuple[int, bytes]]]] = (
            OrderedDict())
        self._lock = threading.Lock()

    def store_event(self, stream_id: str, data: bytes) -> str:
        if "_" in stream_id:
            raise ValueError("stream ids must not contain '_'")
        with self._lock:
            entry = self._streams.get(stream_id)
            if entry is None:
                entry = ([0], deque(maxlen=self._max_events))
                self._streams[stream_id] = entry
                while len(self._streams) > self._max_streams:
                    self._streams.popitem(last=False)
            else:
                self._streams.move_to_end(stream_id)
            counter, events = entry
            counter[0] += 1
            events.append((counter[0], data))
            return f"{stream_id}_{counter[0]}"

    def events_after(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream_id, _, seq_text = last_event_id.rpartition("_")
        if not stream_id or not seq_text.isdigit():
            return None
        seq = int(seq_text)
        with self._lock:
            entry = self._streams.get(stream_id)
            if entry is None:
                return None
            later = [(f"{stream_id}_{n}", data) for n, data in entry[1] if n > seq]
        return stream_id, later

    def forget(self, stream_id: str) -> None:
        """Drop a stream's events (its session ended)."""
        with self._lock:
            self._streams.pop(stream_id, None)
