"""``server.wsgi_app()``: MCP Streamable HTTP as a plain WSGI application.

One endpoint serves both eras:

* **2026-07-28** — every POST is a complete request with its own ``_meta`` envelope and
  mirrored headers, checked against the body. No session; GET and DELETE answer 405.
* **2025-03-26 … 2025-11-25** — ``initialize`` mints a random ``Mcp-Session-Id``; the
  session then uses POST, GET (a standalone stream) and DELETE, with resumable streams.
* **2024-11-05 HTTP+SSE** — ``GET {sse_path}`` and ``POST {messages_path}``, for old clients.

Each request is answered with JSON when its handler answers within ``json_window``
seconds without sending anything else first; otherwise the response becomes an SSE stream
carrying the request's notifications (and, in the handshake era, the server's requests),
then its response, with keep-alive comments while it waits. A 2026-07-28 client that
closes its connection cancels the request, whether it awaits JSON or a stream, on servers
that let the app see the client leave (werkzeug, gunicorn, waitress with
``channel_request_lookahead``); elsewhere a stream notices at its next keep-alive and a
JSON wait only when the answer is written.

Handler threads come from one pool per app: ``limits.max_handlers`` bounds the
requests running at once over all sessions and both eras.

The app is thread-safe and meant for threaded WSGI servers (werkzeug threaded, gunicorn
``gthread``, waitress): SSE responses hold their server thread while they last.

This module is the app: it makes its parts and serves each request in one pass, intake
(``intake.py``: headers, Host and Origin, tokens, scopes, the body, the era of a POST, all
read and checked in one call), then the era's handler (``modern.py`` for 2026-07-28,
``legacy.py`` for the handshake era's session POST/GET/DELETE, ``legacy_sse.py`` for
2024-11-05, each handed the app's :class:`~mcpsync.http.services.Services`), which answers
through ``replies.py`` (JSON or SSE).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import (
    INTERNAL_ERROR,
    STORE_UNAVAILABLE,
    StoreUnavailableError,
)
from ..protocol.budget import Budget
from ..protocol.http_headers import HeaderMapCache
from ..protocol.jsonrpc import Message
from ..server.state_key import user_frame, warn_unshared_key
from . import legacy, legacy_sse, modern
from .events import InMemoryEventStore
from .intake import AUTH_ENVIRON_KEY as AUTH_ENVIRON_KEY
from .intake import (
    METADATA,
    MODERN,
    SSE_MESSAGES,
    SSE_STREAM,
    AuthGate,
    BodyReader,
    HostPolicy,
    HttpRequest,
    Intake,
    Readiness,
    transport_context,
)
from .intake import request_headers as request_headers
from .legacy import SESSION_NOT_FOUND as SESSION_NOT_FOUND
from .options import WsgiKeywords, WsgiOptions
from .relay import Relay
from .replies import Environ as Environ
from .replies import Pacing, _HttpError, refusal_reply
from .replies import StartResponse as StartResponse
from .services import HandOffPool, Services
from .session_registry import SessionRegistry

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..dispatch.context import HandlerContext
    from ..dispatch.principal import Principal
    from ..server.server import ServerCore

logger = logging.getLogger("mcpsync.http")

def _shared(session_store: object) -> bool:
    """Whether ``session_store`` is shared with other processes (any store but the one in
    this process's memory)."""
    from .session_store import MemorySessionStore

    return session_store is not None and not isinstance(session_store, MemorySessionStore)


class McpWsgiApp:
    """The WSGI application of one :class:`~mcpsync.Server`. Thread-safe.

    ``options``: a :class:`~mcpsync.http.options.WsgiOptions` (its groups ``Timing``,
    ``SessionLimits`` and ``Stores``), built once and shared by every worker if you
    like; the keywords below, each one field of it, apply on top. The keywords:

    ``path``: the endpoint path (``None`` serves every path this app is mounted at).
    ``allowed_hosts``/``allowed_origins``: see :class:`~mcpsync.http.intake.HostPolicy`
    (loopback only by default). ``max_body_bytes``: larger bodies get 413.
    ``json_window``: how long a handler may take to answer with plain JSON.
    ``keepalive_interval``: seconds between SSE comments on a quiet stream.
    ``session_idle_timeout``/``max_sessions``: handshake-era sessions (404 once expired).
    ``session_handshake_timeout``: how soon a session whose client never made a second
    request after ``initialize`` (normally ``notifications/initialized``) is dropped.
    When ``max_sessions`` are held, the one idle the longest (no request in flight, no
    open stream) is evicted for a newcomer; 503 only if none can be.
    ``max_sessions_per_principal``/``max_sessions_per_address``: optional caps (``None``:
    none) that apply first, the same way (see :mod:`mcpsync.http.session_table`).
    ``event_store``: resumability of handshake-era streams (``None`` disables it; the
    default is an :class:`~mcpsync.http.events.InMemoryEventStore` bounded to 16 MiB).
    ``session_store``: a :class:`~mcpsync.http.session_store.SessionStore` shared by
    several worker processes, so that a handshake-era session initialized by one can be
    served by another (see that module for what still needs sticky routing).
    ``retry_ms``: the ``retry:`` advice sent to reconnecting clients.
    ``legacy_sessions``: serve the handshake era at all (``False``: 2026-07-28 only).
    ``auth``: a :class:`~mcpsync.auth.server.ResourceServer`: every request needs a valid
    bearer token (401/403 with a ``WWW-Authenticate`` challenge otherwise), the Protected
    Resource Metadata is served at its well-known paths, the verified token is ``ctx.auth``,
    and a handshake-era session is bound to the principal that created it.
    ``bus``: a :class:`~mcpsync.http.bus.Bus` shared by every worker of the deployment,
    with a shared ``session_store`` and ``event_store``: the workers relay a session's
    answers, cancellations, GET stream, ``DELETE``, log level and subscriptions between
    them, so no sticky routing is needed (see :mod:`mcpsync.http.relay`).
    ``store_budget``: seconds one request may spend waiting on its shared stores and bus
    (Redis; a :class:`FileSessionStore`'s lock) in all, over every call it makes; past it
    the request is answered ``503`` with ``Retry-After`` (``None``: each call bounded by
    its own timeouts only).
    """

    def __init__(self, server: ServerCore, options: WsgiOptions | None = None,
                 **keywords: Unpack[WsgiKeywords]) -> None:
        opts = (options if options is not None else WsgiOptions()).with_keywords(keywords)
        #: Everything this app was configured with (frozen).
        self.options = opts
        timing, limits, stores = opts.timing, opts.sessions, opts.stores
        path = opts.path
        self.server = server
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.policy = HostPolicy(opts.allowed_hosts, opts.allowed_origins)
        self.max_body_bytes = opts.max_body_bytes
        self._body = BodyReader(opts.max_body_bytes)
        self.json_window = timing.json_window
        self.keepalive_interval = timing.keepalive_interval
        self.retry_ms = timing.retry_ms
        self.legacy_sessions = legacy_sessions = opts.legacy_sessions
        self.sse_path = opts.sse_path
        self.messages_path = messages_path = opts.messages_path
        self.auth = opts.auth
        self._gate = AuthGate(opts.auth, server)
        if stores.budget is not None and not stores.budget > 0:
            raise ValueError("store_budget must be positive (or None)")
        self.store_budget = stores.budget
        store = (InMemoryEventStore() if stores.event_store == "memory"
                 else stores.event_store)
        self.store = store
        bus, session_store = stores.bus, stores.session_store
        if bus is not None and (store is None or session_store is None):
            raise ValueError("bus= relays between workers through their shared stores: "
                             "give a shared session_store and event_store too")
        self.relay = Relay(bus) if bus is not None else None
        self._intake = Intake(server, self.policy, self._gate, self._body,
                              Readiness(server.start, self.relay.pid if self.relay else None),
                              path=self.path,
                              sse_path=opts.sse_path, messages_path=messages_path,
                              legacy_sessions=legacy_sessions)
        #: The server's own events (2026-07-28 listen streams, task statuses) go over
        #: the same bus: a change made on any worker reaches the listens held on this one.
        self._stop_events = server.relay_events(bus) if bus is not None else None
        # One pool for every handler of this app (2026-07-28 requests and every
        # handshake-era session): limits.max_handlers bounds the app, not each session.
        self._pool = HandOffPool(server.limits.max_handlers, name="mcpsync-http-handler",
                                 max_backlog=4 * server.limits.max_handlers)
        server._dispatcher.telemetry.gauges.track_pool(self._pool)
        self.sessions = SessionRegistry(server, store, idle_timeout=limits.idle_timeout,
                                        max_sessions=limits.max_sessions,
                                        session_store=session_store,
                                        handshake_timeout=limits.handshake_timeout,
                                        pool=self._pool, relay=self.relay,
                                        max_per_principal=limits.max_per_principal,
                                        max_per_address=limits.max_per_address)
        if self.relay is not None and self.sessions.shared is not None:
            server._mounts.hooks.resource_updated.append(self.sessions.resource_updated)
        #: Context-free tools seen to take over half ``json_window`` on a handshake-era
        #: POST's thread: they run on the pool from then on (``legacy.py``).
        self.slow_tools: set[str] = set()
        self._closed = threading.Event()
        self._local = threading.local()
        self._services = Services(
            server=server, pool=self._pool, sessions=self.sessions, store=store,
            relay=self.relay, gate=self._gate, body=self._body,
            header_maps=HeaderMapCache(),
            slow_tools=self.slow_tools, legacy_sessions=legacy_sessions,
            messages_path=messages_path,
            pacing=Pacing(timing.json_window, timing.keepalive_interval, timing.retry_ms,
                          self._peer))
        self._warn_lock = threading.Lock()
        # Several processes sharing this app's clients need one request_state_key: say so
        # here when the stores say it, else at the first request a multi-process WSGI
        # server serves (pointing back at the user's line that built the app).
        self._built_at = user_frame()
        self._checked_processes = False
        if (bus is not None or _shared(session_store)) and (
                not server._dispatcher.state_key_shared):
            self._checked_processes = True
            warn_unshared_key("This app shares its sessions with other processes "
                              "(session_store=, bus=)", self._built_at)

    def start(self) -> Any:
        """Run the server's startup in this process now rather than at the first request
        (see :meth:`Server.start <mcpsync.Server.start>`), so a failing one stops a worker
        from booting: call it where the app is made when each worker imports it, or from
        gunicorn's ``post_worker_init`` hook under ``--preload``. Returns the state."""
        return self.server.start()

    def close(self, timeout: float = 5.0) -> None:
        """End every session, stop the handler threads (bounded), then run the server's
        shutdown (``Server.stop``)."""
        self._closed.set()
        if self._stop_events is not None:
            self._stop_events()
        if self.relay is not None:
            self.relay.close(timeout)
            hooks = self.server._mounts.hooks.resource_updated
            if self.sessions.resource_updated in hooks:
                hooks.remove(self.sessions.resource_updated)
        self.sessions.close_all()
        self._pool.shutdown(timeout)
        self.server.stop()

    # -- WSGI entry ----------------------------------------------------------------------

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """One request, top to bottom: the intake reads and checks it (``intake.py``, one
        call, which also starts the server at its first request), then its era serves it
        (``modern.serve``, ``legacy.serve`` or ``legacy_sse``), which writes the answer
        (``replies.py``). A refusal raised anywhere on the way is answered by
        :meth:`_refuse`."""
        # One budget for all the store work done on this thread for the request (an SSE
        # body, written later, and handler threads bound their own calls).
        with Budget(self.store_budget, "the store work of this request").scope():
            if not self._checked_processes:
                self._check_processes(environ)
            try:
                request = self._intake.read(environ)
                if request.route == METADATA:
                    return self._gate.metadata(request.method, start_response)
                # Where the WSGI server lets us see it: lets a quiet SSE stream, or a wait
                # for a JSON answer, notice a departed client at once, not at its next write.
                self._local.peer = request.peer
                return self._serve(request, start_response)
            except _HttpError as exc:
                return self._refuse(exc, environ, start_response)
            except StoreUnavailableError as exc:
                # A shared store (Redis) is down: a clear, retryable refusal, never a hang.
                # Where the store is (a host and port, a file's path) is the log's, not the
                # caller's.
                logger.warning("shared store unavailable: %s", exc)
                return self._refuse(_HttpError(INTERNAL_ERROR, STORE_UNAVAILABLE,
                                               extra=[("Retry-After", "1")]),
                                    environ, start_response)

    def _refuse(self, refusal: _HttpError, environ: Environ,
                start_response: StartResponse) -> list[bytes]:
        """Answer ``refusal`` as every answer goes: through the server's send middleware
        (:meth:`InboundExecutor.reject`), with the request's transport context bound."""
        answers: list[Message] = []
        transport = transport_context(environ, request_headers(environ), None)
        self._services.executor().reject(refusal.msg_id, refusal.error(), transport,
                                         answers.append)
        return refusal_reply(start_response, refusal, answers[0] if answers else None)

    def _serve(self, request: HttpRequest, start_response: StartResponse) -> Iterable[bytes]:
        """The era's handler, entered once: a 2026-07-28 POST goes to ``modern.py``, the
        2024-11-05 paths to ``legacy_sse.py``, the rest (a session's POST, GET and
        DELETE, ``initialize``) to ``legacy.py``."""
        route = request.route
        if route == MODERN:
            return modern.serve(self._services, request, start_response)
        if route == SSE_STREAM:
            return legacy_sse.open_stream(self._services, request.environ, request.headers,
                                          start_response)
        if route == SSE_MESSAGES:
            return legacy_sse.post(self._services, request.environ, request.headers,
                                   start_response)
        return legacy.serve(self._services, request, start_response)

    def _check_processes(self, environ: Environ) -> None:
        """Warn once when a multi-process WSGI server (``wsgi.multiprocess``: gunicorn with
        several workers, say) serves this app with a key each process made up."""
        with self._warn_lock:
            if self._checked_processes:
                return
            self._checked_processes = True
        if environ.get("wsgi.multiprocess") and not self.server._dispatcher.state_key_shared:
            warn_unshared_key("This app is served by several processes (wsgi.multiprocess)",
                              self._built_at)

    def owner(self) -> Principal | None:
        """The principal of the request this thread is serving (``None`` without auth):
        the owner a handshake-era session is created with and checked against."""
        return self._gate.owner()

    def _peer(self) -> Callable[[], bool] | None:
        """The check of whether this thread's request's client has left (``None``: the
        WSGI server does not let the app see it)."""
        return getattr(self._local, "peer", None)


def close_sse_stream(ctx: HandlerContext) -> bool:
    """``ctx.close_sse_stream()``, kept as a function for code written against it: close the
    client's connection to the SSE stream of ``ctx``'s request now, leaving the request
    running (handshake era, 2025-11-25 polling). ``False`` where that does not apply."""
    return bool(ctx.close_sse_stream())
