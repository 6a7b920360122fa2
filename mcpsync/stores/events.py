"""The event store contract: what makes a handshake-era SSE stream resumable with
``Last-Event-ID`` (:class:`EventStore`), and what a store may do beyond it
(:class:`EventStoreCapabilities`).

Every event sent on a session's SSE stream is stored under an id that names its stream;
a client that lost the connection sends ``GET`` with ``Last-Event-ID`` and gets the events
of that stream that came after it. The stores: :class:`~mcpsync.http.events.InMemoryEventStore`
(the default) and ``mcpsync.redis.RedisEventStore`` (shared by workers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["EventStore", "EventStoreCapabilities", "ForgetsStreams"]


class ForgetsStreams(Protocol):
    """A store that can drop a stream's events at once, when no resume can need them (an
    answer delivered whole, a session ended). Without it the store's own bounds are all
    that frees them."""

    def forget(self, stream_id: str) -> None:
        """Drop the events of ``stream_id`` (nothing if it has none)."""
        ...


@dataclass(frozen=True)
class EventStoreCapabilities:
    """What an :class:`EventStore` can do beyond the protocol, as it declares it in its
    ``capabilities``: each part is the store seen as that capability, or ``None``."""

    #: Dropping a stream at once (the app calls it as soon as no resume can need it).
    forgets: ForgetsStreams | None = None


class EventStore(Protocol):
    """Where SSE events wait for a reconnecting client. Implementations must be thread-safe.

    The server calls :meth:`store_event` on the thread that sends the message, under the
    session's write lock, so keep it quick, and bound every wait on a network: a store on
    a network service should end each call within the ambient
    :class:`~mcpsync.protocol.budget.Budget` (the waiting request's, lent to the sending
    thread through :meth:`Budget.lent <mcpsync.protocol.budget.Budget.lent>`) or a short
    limit of its own, as ``RedisEventStore`` does.

    A store declares its optional parts in :attr:`capabilities` (see :mod:`mcpsync.stores`).
    """

    @property
    def capabilities(self) -> EventStoreCapabilities:
        """The optional parts this store has."""
        ...

    def store_event(self, stream_id: str, data: bytes) -> str:
        """Keep ``data`` (one JSON-RPC message, or ``b""`` for a priming event); return the
        event id, which must identify ``stream_id``."""
        ...

    def events_after(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``last_event_id`` belongs to and its later events in order (ids and
        data), or ``None`` if the id is unknown (or its stream was evicted)."""
        ...
