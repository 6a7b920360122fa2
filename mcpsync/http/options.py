"""The options of :class:`~mcpsync.http.McpWsgiApp`, grouped: :class:`WsgiOptions`.

The app had twenty keyword parameters; they are now three small frozen groups inside
one frozen :class:`WsgiOptions` (``Timing``: how an answer is paced; ``SessionLimits``:
the handshake era's session bounds; ``Stores``: where state shared by workers lives and
how long a request may wait on it), so a deployment can build its options once, name
them, and hand the same object to every worker. The flat keywords documented for
``server.wsgi_app(...)`` (docs/wsgi.md, "Options") stay the everyday spelling: each
names one field (:meth:`WsgiOptions.with_keywords`), applied on top of ``options``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from .bus import Bus
from .events import EventStore
from .session_store import SessionStore

if TYPE_CHECKING:
    from ..auth.server.resource import ResourceServer


@dataclass(frozen=True)
class Timing:
    """How an answer is paced. ``json_window``: how long a handler may take to answer
    with plain JSON (else the answer becomes an SSE stream); ``keepalive_interval``:
    seconds between comments on a quiet SSE stream; ``retry_ms``: the ``retry:`` advice
    sent to reconnecting clients."""

    json_window: float = 0.5
    keepalive_interval: float = 15.0
    retry_ms: int = 1000


@dataclass(frozen=True)
class SessionLimits:
    """The handshake era's sessions, per process. ``idle_timeout``: an idle session is
    closed (404 afterwards); ``handshake_timeout``: a session whose client makes no
    second request after ``initialize`` is dropped; ``max_sessions``: past it the session
    idle the longest is evicted for a newcomer (503 if none can be);
    ``max_per_principal``/``max_per_address``: optional caps applied first, the same way
    (``None``: none)."""

    idle_timeout: float = 1800.0
    handshake_timeout: float = 10.0
    max_sessions: int = 1000
    max_per_principal: int | None = None
    max_per_address: int | None = None


@dataclass(frozen=True)
class Stores:
    """Where state lives, and how long a request may wait on it. ``event_store``: the
    resumability of handshake-era streams (``"memory"``: a fresh, bounded
    :class:`~mcpsync.http.events.InMemoryEventStore` per app; ``None``: off);
    ``session_store``: sessions shared by several workers; ``bus``: relays a session
    between workers sharing both stores; ``budget``: seconds one request may spend
    waiting on its stores and bus in all (503 + ``Retry-After`` past it; ``None``: each
    call bounded by its own timeouts only)."""

    event_store: EventStore | Literal["memory"] | None = "memory"
    session_store: SessionStore | None = None
    bus: Bus | None = None
    budget: float | None = 10.0


@dataclass(frozen=True)
class WsgiOptions:
    """Every option of one app. ``path``: the endpoint (``None``: every path the app is
    mounted at); ``allowed_hosts``/``allowed_origins``: the DNS-rebinding checks
    (loopback by default); ``max_body_bytes``: larger bodies get 413;
    ``legacy_sessions``: serve the handshake era at all; ``sse_path``/``messages_path``:
    the 2024-11-05 endpoints (``sse_path=None``: off); ``auth``: a
    :class:`~mcpsync.auth.server.ResourceServer` (bearer tokens required); then the
    groups above."""

    path: str | None = None
    allowed_hosts: Iterable[str] | None = None
    allowed_origins: Iterable[str] | None = None
    max_body_bytes: int = 4 * 1024 * 1024
    legacy_sessions: bool = True
    sse_path: str | None = "/sse"
    messages_path: str = "/messages"
    auth: ResourceServer | None = None
    timing: Timing = field(default_factory=Timing)
    sessions: SessionLimits = field(default_factory=SessionLimits)
    stores: Stores = field(default_factory=Stores)

    def with_keywords(self, keywords: WsgiKeywords) -> WsgiOptions:
        """These options with the flat keywords of ``wsgi_app(...)`` applied: each names
        one field, of these options or of one of their groups (``json_window`` is
        ``timing.json_window``, ``session_idle_timeout`` is ``sessions.idle_timeout``,
        ``store_budget`` is ``stores.budget``...)."""
        if not keywords:
            return self
        unknown = sorted(set(keywords) - WsgiKeywords.__optional_keys__)
        if unknown:  # as a plain keyword parameter list would refuse them
            raise TypeError(f"unexpected keyword argument(s) for the WSGI app: {unknown}")
        k, timing, limits, stores = keywords, self.timing, self.sessions, self.stores
        return WsgiOptions(
            path=k.get("path", self.path),
            allowed_hosts=k.get("allowed_hosts", self.allowed_hosts),
            allowed_origins=k.get("allowed_origins", self.allowed_origins),
            max_body_bytes=k.get("max_body_bytes", self.max_body_bytes),
            legacy_sessions=k.get("legacy_sessions", self.legacy_sessions),
            sse_path=k.get("sse_path", self.sse_path),
            messages_path=k.get("messages_path", self.messages_path),
            auth=k.get("auth", self.auth),
            timing=Timing(
                json_window=k.get("json_window", timing.json_window),
                keepalive_interval=k.get("keepalive_interval", timing.keepalive_interval),
                retry_ms=k.get("retry_ms", timing.retry_ms)),
            sessions=SessionLimits(
                idle_timeout=k.get("session_idle_timeout", limits.idle_timeout),
                handshake_timeout=k.get("session_handshake_timeout",
                                        limits.handshake_timeout),
                max_sessions=k.get("max_sessions", limits.max_sessions),
                max_per_principal=k.get("max_sessions_per_principal",
                                        limits.max_per_principal),
                max_per_address=k.get("max_sessions_per_address", limits.max_per_address)),
            stores=Stores(
                event_store=k.get("event_store", stores.event_store),
                session_store=k.get("session_store", stores.session_store),
                bus=k.get("bus", stores.bus),
                budget=k.get("store_budget", stores.budget)))


class WsgiKeywords(TypedDict, total=False):
    """The flat keywords of ``server.wsgi_app(...)`` and :class:`McpWsgiApp
    <mcpsync.http.McpWsgiApp>` (docs/wsgi.md, "Options"), typed."""

    path: str | None
    allowed_hosts: Iterable[str] | None
    allowed_origins: Iterable[str] | None
    max_body_bytes: int
    legacy_sessions: bool
    sse_path: str | None
    messages_path: str
    auth: ResourceServer | None
    json_window: float
    keepalive_interval: float
    retry_ms: int
    session_idle_timeout: float
    session_handshake_timeout: float
    max_sessions: int
    max_sessions_per_principal: int | None
    max_sessions_per_address: int | None
    event_store: EventStore | None
    session_store: SessionStore | None
    bus: Bus | None
    store_budget: float | None


__all__ = ["SessionLimits", "Stores", "Timing", "WsgiKeywords", "WsgiOptions"]
