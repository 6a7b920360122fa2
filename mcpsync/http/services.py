"""What the era handlers serve a request with: :class:`Services`, one per app, and the
app's handler pool (:class:`HandOffPool`) it holds.

The WSGI app (``wsgi.py``) routes each request to the handler of its era: ``modern.py``
(2026-07-28), ``legacy.py`` (the handshake era's session POST, GET and DELETE) or
``legacy_sse.py`` (2024-11-05). They are handed this frozen object, made once by the app,
instead of the app itself: what they may use is listed here, and none of them imports the
app (which imports them).

The pool lives here because ``Services.pool`` is its one home: the app makes it, and the
era handlers reach it only through this object. It can also run one job on the caller's
thread. A handshake-era session's engine runs in push mode: the POST's thread routes the
request, and the engine hands its handler to the pool, then the POST's thread waits on the
response stream for the answer. For a tool that can neither report progress nor see
cancellation (no context parameter), that hand-off buys nothing and costs two thread
switches per call: the 2026-07-28 path already runs such tools on the request's thread
(``modern.py``). The engine only knows ``pool.submit``, so the POST *arms* the pool around
routing that one request (:meth:`HandOffPool.inline_next`): the next job submitted from
this thread runs right here, once, as a pool thread would run it. The pool itself knows
nothing of HTTP or MCP: it is ``threads/pool.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..dispatch.inbound import InboundExecutor, RequestExecutors
from ..protocol.http_headers import HeaderMapCache
from ..server.server import ServerCore
from ..stores.events import EventStore
from ..threads.pool import HandOffPool
from .intake import AuthGate, BodyReader
from .relay import Relay
from .replies import OPEN_STREAMS, OpenStreams, Pacing
from .session_registry import SessionRegistry


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
    #: The header parameters of each tool's input schema (``Mcp-Param-*``): computed once
    #: per tool description (bounded).
    header_maps: HeaderMapCache
    #: Context-free tools seen to take over half ``json_window`` on a handshake-era
    #: POST's thread: they run on the pool from then on (``legacy.py``). Names of
    #: registered tools only, so bounded by the server's tool count.
    slow_tools: set[str]
    #: Whether the handshake era is served at all.
    legacy_sessions: bool
    #: Where a 2024-11-05 client POSTs its messages.
    messages_path: str

    #: ``executor()``: an inbound executor over the server's message middleware as it is
    #: now (its ``recv_middleware`` and ``send_middleware`` lists, read at each call; one
    #: executor shared by every request while both are empty: ``RequestExecutors``).
    executor: Callable[[], InboundExecutor] = field(init=False)

    def __post_init__(self) -> None:
        # The server's open-SSE gauge reads the process's count (each app registers it;
        # the server's gauges count it once).
        self.server._dispatcher.telemetry.gauges.track("sse_streams.open", OPEN_STREAMS,
                                                       OpenStreams.count, once=True)
        object.__setattr__(self, "executor", RequestExecutors(
            self.server.recv_middleware, self.server.send_middleware, name="mcpsync-http",
            telemetry=self.server._dispatcher.telemetry))


__all__ = ["HandOffPool", "Services"]
