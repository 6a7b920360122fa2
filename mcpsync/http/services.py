"""What the era handlers serve a request with: :class:`Services`, one per app.

The WSGI app (``wsgi.py``) routes each request to the handler of its era: ``modern.py``
(2026-07-28), ``legacy.py`` (the handshake era's session POST, GET and DELETE) or
``legacy_sse.py`` (2024-11-05). They are handed this frozen object, made once by the app,
instead of the app itself: what they may use is listed here, and none of them imports the
app (which imports them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dispatch.inbound import InboundExecutor
from ..server.server import ServerCore
from ..stores.events import EventStore
from .body import BodyReader
from .gate import AuthGate
from .handoff import HandOffPool
from .registry import SessionRegistry
from .relay import Relay
from .replies import Pacing
from .sse_body import OPEN_STREAMS, OpenStreams


@dataclass(frozen=True)
class Services:
    """One app's parts, as its era handlers use them. The object is frozen; the parts
    are the app's own (thread-safe each), shared with it."""

    #: The server served.
    server: ServerCore
    #: The app's JSON window, keep-alive and retry advice, and the client-left check.
    pacing: Pacing
    #: The app's one pool of handler threads (both eras, every session).
    pool: HandOffPool
    #: The handshake-era sessions, by id.
    sessions: SessionRegistry
    #: Where handshake-era streams keep their events for a resume (``None``: not kept).
    store: EventStore | None
    #: The relay between workers (``None``: this worker serves alone).
    relay: Relay | None
    #: Bearer tokens and scopes, and who the request on this thread belongs to.
    gate: AuthGate
    #: Reads a request body within the app's bound.
    body: BodyReader
    #: The header parameters of each tool's input schema (``Mcp-Param-*``), by the id of
    #: its description: computed once per tool.
    header_maps: dict[int, dict[str, tuple[str, ...]] | None]
    #: Context-free tools seen to take over half ``json_window`` on a handshake-era
    #: POST's thread: they run on the pool from then on (``legacy.py``). Names of
    #: registered tools only, so bounded by the server's tool count.
    slow_tools: set[str]
    #: Whether the handshake era is served at all.
    legacy_sessions: bool
    #: Where a 2024-11-05 client POSTs its messages.
    messages_path: str

    def __post_init__(self) -> None:
        # The server's open-SSE gauge reads the process's count (each app registers it;
        # the server's gauges count it once).
        self.server.telemetry.gauges.track("sse_streams.open", OPEN_STREAMS,
                                           OpenStreams.count, once=True)

    def executor(self) -> InboundExecutor:
        """The server's middleware as it is now (like a session, a request takes a copy)."""
        return InboundExecutor(self.server.recv_middleware, self.server.send_middleware,
                               name="mcpsync-http", telemetry=self.server.telemetry)


__all__ = ["Services"]
