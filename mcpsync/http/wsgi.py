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

This module is the app and its router (host checks, which era a POST belongs to). The
eras are served by ``modern.py`` (2026-07-28), ``legacy.py`` (the handshake era's session
POST/GET/DELETE) and ``legacy_sse.py`` (2024-11-05), each handed the app's
:class:`~mcpsync.http.services.Services`; the JSON or SSE answer is written by
``replies.py``; headers, Host and Origin, tokens, scopes and the body are read and checked by
``intake.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    STORE_UNAVAILABLE,
    MCPError,
    StoreUnavailableError,
)
from ..protocol import jsonrpc
from ..protocol.budget import Budget
from ..protocol.http_headers import HeaderMapCache
from ..protocol.jsonrpc import Invalid, Message, Notification, Request
from ..protocol.versions import META_VERSION, is_stateless
from ..server.lifespan import StartupError
from ..server.state_key import user_frame, warn_unshared_key
from . import legacy, legacy_sse, modern
from .events import InMemoryEventStore
from .intake import AUTH_ENVIRON_KEY as AUTH_ENVIRON_KEY
from .intake import AuthGate, BodyReader, HostPolicy, transport_context
from .intake import request_headers as request_headers
from .legacy import SESSION_NOT_FOUND as SESSION_NOT_FOUND
from .options import WsgiKeywords, WsgiOptions
from .relay import Relay
from .replies import Environ as Environ
from .replies import Pacing, _accepts, _HttpError, _peer_probe, method_not_allowed, refusal_reply
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
        #: The server's own events (2026-07-28 listen streams, task statuses) go over
        #: the same bus: a change made on any worker reaches the listens held on this one.
        self._stop_events = server.relay_events(bus) if bus is not None else None
        # One pool for every handler of this app (2026-07-28 requests and every
        # handshake-era session): limits.max_handlers bounds the app, not each session.
        self._pool = HandOffPool(server.limits.max_handlers, name="mcpsync-http-handler",
                                 max_backlog=4 * server.limits.max_handlers)
        server.telemetry.gauges.track_pool(self._pool)
        self.sessions = SessionRegistry(server, store, idle_timeout=limits.idle_timeout,
                                        max_sessions=limits.max_sessions,
                                        session_store=session_store,
                                        handshake_timeout=limits.handshake_timeout,
                                        pool=self._pool, relay=self.relay,
                                        max_per_principal=limits.max_per_principal,
                                        max_per_address=limits.max_per_address)
        if self.relay is not None and self.sessions.shared is not None:
            server.resource_update_hooks.append(self.sessions.resource_updated)
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
        self._warned_single = False
        self._warned_fork = False
        # Several processes sharing this app's clients need one request_state_key: say so
        # here when the stores say it, else at the first request a multi-process WSGI
        # server serves (pointing back at the user's line that built the app).
        self._built_at = user_frame()
        self._startup_failure: StartupError | None = None  # the one logged
        self._checked_processes = False
        if (bus is not None or _shared(session_store)) and not server.request_state_key_shared:
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
            hooks = self.server.resource_update_hooks
            if self.sessions.resource_updated in hooks:
                hooks.remove(self.sessions.resource_updated)
        self.sessions.close_all()
        self._pool.shutdown(timeout)
        self.server.stop()

    # -- WSGI entry ----------------------------------------------------------------------

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        # One budget for all the store work done on this thread for the request (an SSE
        # body, written later, and handler threads bound their own calls).
        with Budget(self.store_budget, "the store work of this request").scope():
            return self._serve(environ, start_response)

    def _serve(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if not self._checked_processes:
            self._check_processes(environ)
        headers = request_headers(environ)
        try:
            return self._route(environ, headers, start_response)
        except _HttpError as exc:
            return self._refuse(exc, environ, headers, start_response)
        except StoreUnavailableError as exc:
            # A shared store (Redis) is down: a clear, retryable refusal, never a hang.
            # Where the store is (a host and port, a file's path) is the log's, not the
            # caller's.
            logger.warning("shared store unavailable: %s", exc)
            return self._refuse(_HttpError(INTERNAL_ERROR, STORE_UNAVAILABLE,
                                           extra=[("Retry-After", "1")]),
                                environ, headers, start_response)

    def _refuse(self, refusal: _HttpError, environ: Environ, headers: dict[str, str],
                start_response: StartResponse) -> list[bytes]:
        """Answer ``refusal`` as every answer goes: through the server's send middleware
        (:meth:`InboundExecutor.reject`), with the request's transport context bound."""
        answers: list[Message] = []
        transport = transport_context(environ, headers, None)
        self._services.executor().reject(refusal.msg_id, refusal.error(), transport,
                                         answers.append)
        return refusal_reply(start_response, refusal, answers[0] if answers else None)

    def _route(self, environ: Environ, headers: dict[str, str],
               start_response: StartResponse) -> Iterable[bytes]:
        host = headers.get("host") or environ.get("SERVER_NAME")
        if not self.policy.host_allowed(host):
            raise _HttpError(INVALID_REQUEST, f"Forbidden: Host {host!r} is not allowed",
                             status="403 Forbidden")
        if not self.policy.origin_allowed(headers.get("origin")):
            raise _HttpError(INVALID_REQUEST,
                             f"Forbidden: Origin {headers.get('origin')!r} is not allowed",
                             status="403 Forbidden")
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO") or "/"
        self._gate.begin()
        if self.auth is not None:
            if (path in self.auth.metadata_paths
                    or (environ.get("SCRIPT_NAME", "") + (environ.get("PATH_INFO") or ""))
                    in self.auth.metadata_paths):
                return self._gate.metadata(method, start_response)
            self._gate.authenticate(environ, headers)
        if self.relay is not None and self.relay.pid != os.getpid():
            raise self._forked_relay()
        try:
            # Startup happens at the first request of each process (a gunicorn worker, not
            # the master that imported the app under --preload), unless start() ran it.
            self.server.start()
        except StartupError as exc:
            # This app answers the failure rather than raising it: so it logs it, once
            # (the same failure is met again by every request until a restart).
            with self._warn_lock:
                first, self._startup_failure = self._startup_failure is not exc, exc
            if first:
                logger.error("mcpsync: %s; every request is answered 503 until the "
                             "process is restarted", exc, exc_info=exc)
            # Callers get a generic text: the exception's (a path, a host, a DSN with its
            # password) is the operator's, in the log above. An MCPError's is the one
            # exception written for callers (a proxy's "the proxied server can not be
            # reached"): it is said too, as a handler's MCPError would be.
            cause = exc.__cause__
            state = "failed to start" if cause is not None else "is still starting"
            while isinstance(cause, StartupError):  # a mounted server's own failure
                cause = cause.__cause__
            said = f": {cause.message}" if isinstance(cause, MCPError) else ""
            raise _HttpError(INTERNAL_ERROR, f"Service unavailable: the server {state}{said}"
                             ) from None
        if environ.get("wsgi.multithread") is False:
            self._warn_single_threaded(environ)
            if method == "GET" and (path == self.sse_path or self.path is None
                                    or (path.rstrip("/") or "/") == self.path):
                raise self._single_threaded_get(path)
        # Where the WSGI server lets us see it: lets a quiet SSE stream, or a wait for a
        # JSON answer, notice a departed client at once instead of at its next write.
        self._local.peer = _peer_probe(environ)
        if self.legacy_sessions and self.sse_path is not None:
            if path == self.sse_path:
                # Reserved for the old transport, whatever ``path`` says: a client that
                # POSTs here first (as the spec's fallback has it) must be refused so
                # that it goes on to GET the stream.
                if method != "GET":
                    raise _HttpError(INVALID_REQUEST,
                                     "Method not allowed: this is the HTTP+SSE stream; GET it",
                                     status="405 Method Not Allowed", extra=[("Allow", "GET")])
                return legacy_sse.open_stream(self._services, environ, headers,
                                              start_response)
            if path == self.messages_path and method == "POST":
                return legacy_sse.post(self._services, environ, headers, start_response)
        if self.path is not None and (path.rstrip("/") or "/") != self.path:
            raise _HttpError(INVALID_REQUEST, f"Not found: {path}", status="404 Not Found")
        if method == "POST":
            return self._post(environ, headers, start_response)
        if method == "GET":
            return legacy.get(self._services, headers, start_response)
        if method == "DELETE":
            return legacy.delete(self._services, headers, start_response)
        raise method_not_allowed()

    def _check_processes(self, environ: Environ) -> None:
        """Warn once when a multi-process WSGI server (``wsgi.multiprocess``: gunicorn with
        several workers, say) serves this app with a key each process made up."""
        with self._warn_lock:
            if self._checked_processes:
                return
            self._checked_processes = True
        if environ.get("wsgi.multiprocess") and not self.server.request_state_key_shared:
            warn_unshared_key("This app is served by several processes (wsgi.multiprocess)",
                              self._built_at)

    def _forked_relay(self) -> _HttpError:
        # The relay's thread and bus subscription stayed in the parent: serving here would
        # silently drop every answer, cancel and GET-stream message from other workers.
        with self._warn_lock:
            if not self._warned_fork:
                self._warned_fork = True
                logger.error("mcpsync: this app was built with bus= before the worker "
                             "process forked (gunicorn --preload?); build it in each "
                             "worker (no --preload, or in post_fork): see docs/deploying.md")
        return _HttpError(INTERNAL_ERROR, "Service unavailable: the relay between workers "
                          "was started in another process (built before a fork)")

    def owner(self) -> Principal | None:
        """The principal of the request this thread is serving (``None`` without auth):
        the owner a handshake-era session is created with and checked against."""
        return self._gate.owner()

    def _peer(self) -> Callable[[], bool] | None:
        """The check of whether this thread's request's client has left (``None``: the
        WSGI server does not let the app see it)."""
        return getattr(self._local, "peer", None)

    def _single_threaded_get(self, path: str) -> _HttpError:
        """A GET on a server that runs one request at a time per process (gunicorn's
        default ``sync`` worker, a non-threaded werkzeug): a stream would hold the only
        thread, and the session's next POST would wait behind it for ever. So no
        standalone stream (405, which the spec lets a server answer and clients expect),
        and no 2024-11-05 HTTP+SSE stream (503, saying why)."""
        if self.legacy_sessions and self.sse_path is not None and path == self.sse_path:
            return _HttpError(
                INTERNAL_ERROR,
                "Service unavailable: the HTTP+SSE transport needs a WSGI server that serves "
                "requests concurrently (gunicorn -k gthread), not one request at a time")
        return method_not_allowed()

    def _warn_single_threaded(self, environ: Environ) -> None:
        with self._warn_lock:
            if self._warned_single:
                return
            self._warned_single = True
        logger.warning(
            "mcpsync: this WSGI server (%s) runs one request at a time per process "
            "(wsgi.multithread is False: gunicorn's default sync worker?). Handshake-era "
            "clients get no standalone GET stream (405), a tool that asks the client "
            "(elicitation, sampling, roots) waits for a free worker, and each open "
            "subscriptions/listen holds one. Serve with a threaded worker: gunicorn "
            "-k gthread --threads 8 (see docs/wsgi.md).",
            environ.get("SERVER_SOFTWARE", "unknown"))

    # -- POST ----------------------------------------------------------------------------

    def _post(self, environ: Environ, headers: dict[str, str],
              start_response: StartResponse) -> Iterable[bytes]:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise _HttpError(INVALID_REQUEST,
                             "Unsupported media type: send Content-Type: application/json",
                             status="415 Unsupported Media Type")
        want_json, want_sse = _accepts(headers)
        if not want_json and not want_sse:
            raise _HttpError(INVALID_REQUEST,
                             "Not acceptable: accept application/json and text/event-stream",
                             status="406 Not Acceptable")
        body = self._body.read(environ)
        batch = jsonrpc.is_batch(body)
        items = jsonrpc.decode(body)
        if not items:
            raise _HttpError(INVALID_REQUEST, "Invalid request: empty body")
        if not batch and isinstance(items[0], Invalid):
            reply = items[0].reply
            error: dict[str, Any] = reply.error if reply is not None else {
                "code": INVALID_REQUEST, "message": items[0].reason}
            raise _HttpError(int(error["code"]), str(error["message"]),
                             reply.id if reply is not None else None)
        refusal = self._gate.scope_refusal(items)
        if refusal is not None:
            raise self._gate.refuse(refusal, getattr(items[0], "id", None))
        session_id = headers.get("mcp-session-id")
        first = items[0]
        if not batch and isinstance(first, (Request, Notification)) and self._is_modern(
                first, headers):
            if isinstance(first, Notification):
                # Nothing to route it to without a session, but middleware sees it.
                transport = transport_context(environ, headers, None)
                self._services.executor().receive(first, transport, lambda _: None, lambda _: None)
                start_response("202 Accepted", [("Content-Length", "0")])
                return [b""]
            return modern.serve(self._services, first, environ, headers, start_response)
        if not self.legacy_sessions:
            raise _HttpError(INVALID_PARAMS,
                             "Invalid params: this server speaks 2026-07-28 only; put "
                             f"{META_VERSION!r} in the request's _meta",
                             getattr(first, "id", None))
        if session_id:
            session = self.sessions.get(session_id, self.owner())
            if session is None:
                raise _HttpError(SESSION_NOT_FOUND, "Session not found",
                                 getattr(first, "id", None))
            return legacy.post(self._services, session, items, batch, environ, headers,
                               start_response)
        if not batch and isinstance(first, Request) and first.method == "initialize":
            return legacy.initialize(self._services, first, environ, headers,
                                     start_response)
        if batch and any(isinstance(i, Request) and i.method == "initialize" for i in items):
            raise _HttpError(INVALID_REQUEST,
                             "Invalid request: initialize cannot be batched")
        raise _HttpError(INVALID_REQUEST,
                         "Bad request: no Mcp-Session-Id header (send initialize first), and "
                         f"no {META_VERSION!r} in _meta (2026-07-28)",
                         getattr(first, "id", None))

    def _is_modern(self, message: Request | Notification, headers: dict[str, str]) -> bool:
        if not self.server.modern_versions:
            return False
        if is_stateless(message.params):
            return True
        version = headers.get("mcp-protocol-version")
        return version is not None and version not in self.server.legacy_versions and (
            not headers.get("mcp-session-id"))


def close_sse_stream(ctx: HandlerContext) -> bool:
    """``ctx.close_sse_stream()``, kept as a function for code written against it: close the
    client's connection to the SSE stream of ``ctx``'s request now, leaving the request
    running (handshake era, 2025-11-25 polling). ``False`` where that does not apply."""
    return bool(ctx.close_sse_stream())
