"""One client's session with a server: the handshake, the gate, and method dispatch.

A :class:`ServerSession` is made by :meth:`Server.connect` for each transport. It owns the
:class:`~mcpsync.engine.connection.Connection`, follows the lifecycle table in
:mod:`mcpsync.protocol.lifecycle`, and turns each inbound request into a call of the
registered method handler with a :class:`~mcpsync.dispatch.context.HandlerContext`.
Thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable
from typing import Any, Final, Protocol

from ..dispatch.context import HandlerContext
from ..dispatch.inbound import TransportContext
from ..dispatch.ports import SessionInfo
from ..engine.connection import Connection, ConnectionLimits, Middleware
from ..engine.hooks import ConnectionEvents, ConnectionThreads
from ..engine.pool import WorkerPool
from ..engine.requests import InboundRequest
from ..errors import (
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosedError,
    InvalidParamsError,
    MCPError,
    MethodNotFoundError,
)
from ..protocol import levels, lifecycle
from ..protocol.jsonrpc import Notification
from ..protocol.methods import VIEWS
from ..protocol.versions import LEGACY_VERSIONS, is_stateless, negotiate_legacy
from ..transports.base import Transport
from .dispatcher import Dispatcher
from .host import RequestServer
from .listen import ListenRegistry
from .subscribers import ResourceSubscribers

logger = logging.getLogger("mcpsync.server")


class SessionServer(RequestServer, Protocol):
    """What a session reads of its server (a ``ServerCore``), beyond answering requests:
    its middleware and bounds for the connection, and the subscriptions and listens a
    session holds. The rest (the handlers, telemetry) is the server's dispatcher, handed
    to the session with it."""

    @property
    def send_middleware(self) -> list[Middleware]: ...

    @property
    def recv_middleware(self) -> list[Middleware]: ...

    @property
    def listeners(self) -> ListenRegistry: ...

    @property
    def subscribers(self) -> ResourceSubscribers: ...


class ConnectedSessions:
    """The sessions of one server connected now: the server adds each one it connects,
    and the session takes itself out when its connection closes. Its own object (not the
    server seen through a protocol) so that a session needs nothing private of its
    server. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: set[ServerSession] = set()

    def add(self, session: ServerSession) -> None:
        with self._lock:
            self._sessions.add(session)

    def discard(self, session: ServerSession) -> None:
        with self._lock:
            self._sessions.discard(session)

    def snapshot(self) -> list[ServerSession]:
        """The sessions connected now, as a list the caller may iterate unlocked."""
        with self._lock:
            return list(self._sessions)

    def __len__(self) -> int:
        return len(self._sessions)


class ServerSession:
    """A connected client. Made by :meth:`Server.connect`; not constructed directly."""

    def __init__(
        self,
        server: SessionServer,
        dispatcher: Dispatcher,
        transport: Transport,
        *,
        name: str = "mcpsync-server",
        drain_timeout: float = 0.0,
        pool: WorkerPool | None = None,
        push: bool = False,
        connected: ConnectedSessions | None = None,
    ) -> None:
        self.server = server
        #: What the session answers through: the server's handlers, how they run, its
        #: identity and capabilities by revision.
        self._dispatcher = dispatcher
        #: Where the server keeps its connected sessions (this one leaves it when closed).
        self._connected = connected
        self._info = SessionInfo()
        self._state = lifecycle.State.NEW
        self._state_lock = threading.Lock()
        self._log_level: str | None = None
        self._ended = threading.Event()
        #: The kinds whose capability this session's ``initialize`` declared: only those
        #: get ``list_changed`` notifications (None: not initialized here, all of them).
        self._declared: frozenset[str] | None = None
        self._connection = Connection(
            transport,
            on_request=self._on_request,
            events=ConnectionEvents(notification=self._on_notification,
                                    arrival=self._on_arrival, closing=self._on_closing,
                                    closed=self._on_closed),
            send_middleware=server.send_middleware,
            recv_middleware=server.recv_middleware,
            limits=ConnectionLimits(max_handlers=server.limits.max_handlers,
                                    request_timeout=server.limits.request_timeout,
                                    drain_timeout=drain_timeout),
            name=name,
            threads=ConnectionThreads(pool=pool, push=push, inline_key=inline_key),
            transport_context=transport_context(transport),
            telemetry=dispatcher.telemetry,
        )

    # -- SessionHandle -------------------------------------------------------------------

    @property
    def info(self) -> SessionInfo:
        return self._info

    @property
    def connection(self) -> Connection:
        return self._connection

    @property
    def ended(self) -> threading.Event:
        """Set when the session is over."""
        return self._ended

    def log_enabled(self, level: str) -> bool:
        return levels.at_least(level, self._log_level)

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def state(self) -> lifecycle.State:
        return self._state

    def start(self) -> ServerSession:
        self._connection.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """End the session. Its open ``subscriptions/listen`` streams are first ended
        gracefully (a ``complete`` answer each, waiting at most 1 s)."""
        if not self._connection.closed:
            self.server.listeners.end([self._ended])
            self.server.listeners.wait_ended([self._ended], min(timeout, 1.0))
        self._connection.close(timeout)

    def wait_closed(self, timeout: float | None = None) -> bool:
        return self._connection.wait_closed(timeout)

    def _advance(self, event: lifecycle.Event) -> None:
        with self._state_lock:
            self._state = lifecycle.advance(self._state, event)

    def _on_closing(self) -> None:
        # The peer is gone or going: let subscriptions return instead of holding the drain.
        self.server.listeners.end([self._ended])

    def _on_closed(self) -> None:
        with self._state_lock:
            self._state = lifecycle.advance(self._state, lifecycle.Event.CLOSED)
        if self._connected is not None:  # before ``ended``: who waits for it sees it gone
            self._connected.discard(self)
        self._ended.set()
        self.server.subscribers.drop(self)

    # -- sending to the client --------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a session-level notification (not tied to any request)."""
        self._connection.notify(method, params)

    def send_list_changed(self, kind: str) -> None:
        """Tell an initialized client that the ``kind`` list (tools, prompts, resources) changed."""
        if self._state is not lifecycle.State.READY:
            return
        if self._declared is not None and kind not in self._declared:
            return  # registered after this session began: it was not told it could change
        try:
            self.notify(f"notifications/{kind}/list_changed")
        except ConnectionClosedError:
            pass

    def subscribe(self, uri: str) -> None:
        """Record ``resources/subscribe``: updates of ``uri`` are sent to this session
        until it unsubscribes or ends (in the server's
        :class:`~mcpsync.server.subscribers.ResourceSubscribers`, whose watchers may refuse
        it: their error is raised)."""
        if self._ended.is_set():
            return
        self.server.subscribers.add(self, (uri,))
        if self._ended.is_set():  # it ended meanwhile: _on_closed may have dropped it first
            self.server.subscribers.drop(self)

    def unsubscribe(self, uri: str) -> None:
        self.server.subscribers.remove(self, (uri,))

    def send_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` if this session subscribed to ``uri``."""
        if self.server.subscribers.has(self, uri):
            try:
                self.notify("notifications/resources/updated", {"uri": uri})
            except ConnectionClosedError:
                pass

    # -- receiving -----------------------------------------------------------------------

    def _on_request(self, inbound: InboundRequest) -> dict[str, Any]:
        method = inbound.method
        if self.server.protocol.modern_versions and is_stateless(inbound.params):
            from . import stateless  # the modern era's machinery, loaded on its first request

            return stateless.serve(self, self._dispatcher, inbound)
        if method == "initialize":
            return self._initialize(inbound.params)
        if not lifecycle.admits(self._state, method):
            raise MCPError(
                f"Invalid request: {method} before the session was initialized",
                code=INVALID_REQUEST,
            )
        handler = self.server.methods.request_handler(method)  # method_handlers.get
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
        return self._dispatcher.run_handler(handler, HandlerContext(inbound, self),
                                            inbound.params)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._state is not lifecycle.State.NEW:
            raise MCPError("Invalid request: the session is already initialized",
                           code=INVALID_REQUEST)
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise InvalidParamsError('Invalid params: "protocolVersion" must be a string')
        capabilities = params.get("capabilities")
        if capabilities is not None and not isinstance(capabilities, dict):
            raise InvalidParamsError('Invalid params: "capabilities" must be an object')
        client_info = params.get("clientInfo")
        if not self.server.protocol.legacy_versions:
            # A 2026-07-28-only server: the handshake is a revision it does not speak. The
            # answer names what it does, as a stateless request naming an unknown revision
            # is answered, so a client can fall back (the spec's -32022 data shape).
            modern = list(self.server.protocol.modern_versions)
            raise MCPError(f"Unsupported protocol version: {requested} (this server speaks "
                           f"only {', '.join(modern)}, without the initialize handshake)",
                           code=UNSUPPORTED_PROTOCOL_VERSION,
                           data={"supported": modern, "requested": requested})
        version = negotiate_legacy(requested, self.server.protocol.legacy_versions)
        self._connection.protocol_version = version
        self._info = SessionInfo(
            protocol_version=version,
            client_info=client_info if isinstance(client_info, dict) else None,
            client_capabilities=capabilities or {},
            session_id=self._info.session_id,
        )
        self._advance(lifecycle.Event.INITIALIZE_ANSWERED)
        capabilities = self._dispatcher.capabilities_for(version)
        self._declared = frozenset(capabilities)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": self._dispatcher.info_for(version),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    def restore(self, protocol_version: str, client_info: dict[str, Any] | None,
                client_capabilities: dict[str, Any]) -> None:
        """Take up a session another process initialized: as if ``initialize`` had been
        answered with ``protocol_version`` and ``notifications/initialized`` received.
        Only before anything has been received."""
        if protocol_version not in self.server.protocol.legacy_versions:
            raise ValueError(f"cannot restore a {protocol_version!r} session here")
        with self._state_lock:
            if self._state is not lifecycle.State.NEW:
                raise RuntimeError("only a new session can be restored")
            self._info = SessionInfo(protocol_version=protocol_version,
                                     client_info=client_info,
                                     client_capabilities=client_capabilities,
                                     session_id=self._info.session_id)
            state = lifecycle.advance(self._state, lifecycle.Event.INITIALIZE_ANSWERED)
            self._state = lifecycle.advance(state, lifecycle.Event.INITIALIZED_RECEIVED)
        self._connection.protocol_version = protocol_version

    def _on_arrival(self, message: Notification) -> bool:
        # On the receiving thread, in message order: a request sent after
        # notifications/initialized must find the session READY, even when the
        # notification thread is still busy with an earlier (slow) handler.
        if message.method != "notifications/initialized":
            return False
        try:
            self._advance(lifecycle.Event.INITIALIZED_RECEIVED)
        except lifecycle.LifecycleError as exc:
            logger.debug("ignored notifications/initialized: %s", exc)
        return True

    def _on_notification(self, message: Notification) -> None:
        handler = self._dispatcher.notification_handlers.get(message.method)
        if handler is not None:
            handler(self, message.params or {})

    def set_log_level(self, level: str) -> None:
        """Apply ``logging/setLevel``: only messages at ``level`` or above are sent."""
        if not levels.is_level(level):
            raise InvalidParamsError(f"Invalid params: unknown log level {level!r}")
        self._log_level = level


#: Methods that wait by design (for a task, for events): never run on the reader thread.
_NEVER_INLINE: Final = VIEWS.never_inline
#: Methods whose target is a peer-chosen name (a tool, a prompt), and its param.
_NAMED: Final = VIEWS.named


def inline_key(method: str, params: dict[str, Any]) -> Hashable | None:
    """What the engine learns "is this quick?" about, per request (see
    :mod:`mcpsync.engine.inline`): one key per tool and per prompt (one slow tool must not
    send the quick ones to the pool), one per other method (resources share one: their
    URIs are unbounded); ``None``: always on the pool."""
    param = _NAMED.get(method)
    if param is not None:
        name = params.get(param)
        return (method, name) if isinstance(name, str) else method
    if method in _NEVER_INLINE:
        return None
    return method


def transport_context(transport: Transport) -> TransportContext:
    """The context a session's messages start from: the transport's own when it offers
    one (``transport_context()``: an HTTP session), else by the kind of transport."""
    own = getattr(transport, "transport_context", None)
    if callable(own):
        context = own()
        if isinstance(context, TransportContext):
            return context
    from ..transports.memory import MemoryTransport

    return TransportContext("memory" if isinstance(transport, MemoryTransport) else "stdio")


__all__ = ["LEGACY_VERSIONS", "ServerSession", "inline_key", "transport_context"]
