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

Handler threads come from one pool per app: ``max_concurrent_handlers`` bounds the
requests running at once over all sessions and both eras.

The app is thread-safe and meant for threaded WSGI servers (werkzeug threaded, gunicorn
``gthread``, waitress): SSE responses hold their server thread while they last.

This module is the app and its router (host checks, body reading, which era a POST
belongs to). The eras are served by ``modern.py`` (2026-07-28), ``legacy.py`` (the
handshake era's session POST/GET/DELETE) and ``legacy_sse.py`` (2024-11-05); the JSON or
SSE answer is written by ``replies.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from ..auth.server.resource import Refusal
from ..dispatch.inbound import InboundExecutor
from ..dispatch.transport import Headers, TransportContext
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, StoreUnavailableError
from ..protocol import envelope, jsonrpc
from ..protocol.budget import Budget
from ..protocol.envelope import is_stateless
from ..protocol.jsonrpc import Invalid, Notification, Request
from ..protocol.numerals import parse_decimal
from ..server.lifespan import StartupError
from ..server.scopes import required_scopes
from . import legacy, legacy_sse, modern
from .bus import Bus
from .events import EventStore, InMemoryEventStore
from .handoff import HandOffPool
from .legacy import SESSION_NOT_FOUND as SESSION_NOT_FOUND
from .registry import SessionRegistry
from .relay import Relay
from .replies import Environ as Environ
from .replies import StartResponse as StartResponse
from .replies import _accepts, _HttpError, error_reply, json_reply, method_not_allowed
from .security import HostPolicy
from .session_store import SessionStore
from .sse_body import _peer_probe

if TYPE_CHECKING:
    from ..auth.server.resource import ResourceServer
    from ..server.server import ServerCore

logger = logging.getLogger("mcpsync.http")

_DEFAULT_STORE: Final = object()
#: Where the verified AccessToken of a request sits in its WSGI environ.
AUTH_ENVIRON_KEY: Final = "mcpsync.auth"

#: WSGI environ key -> header name (``HTTP_MCP_SESSION_ID`` -> ``mcp-session-id``; ``""``
#: for a key that is not a header). Every request walks the whole environ, and some servers
#: put far more than headers in it (granian copies the process environment into each one),
#: so the translation is looked up, not redone. Bounded in entries and in bytes: clients
#: choose header names, so only keys up to ``_MAX_CACHED_KEY`` characters are remembered,
#: at most ``_MAX_HEADER_NAMES`` of them (~125 KiB at worst); the rest are translated each
#: time.
_HEADER_NAMES: dict[str, str] = {}
_MAX_HEADER_NAMES: Final = 512
_MAX_CACHED_KEY: Final = 64


def request_headers(environ: Environ) -> dict[str, str]:
    """The request's headers from a WSGI ``environ``, lower-cased names with dashes, plus
    ``content-type`` and ``content-length`` (which WSGI keeps without the ``HTTP_``)."""
    names = _HEADER_NAMES
    headers: dict[str, str] = {}
    for key, value in environ.items():
        name = names.get(key)
        if name is None:
            name = key[5:].replace("_", "-").lower() if key.startswith("HTTP_") else ""
            if len(names) < _MAX_HEADER_NAMES and len(key) <= _MAX_CACHED_KEY:
                names[key] = name  # a racing thread writes the same value: harmless
        if name:
            headers[name] = value
    if "CONTENT_TYPE" in environ:
        headers["content-type"] = environ["CONTENT_TYPE"]
    if "CONTENT_LENGTH" in environ:
        headers["content-length"] = environ["CONTENT_LENGTH"]
    return headers


class McpWsgiApp:
    """The WSGI application of one :class:`~mcpsync.Server`. Thread-safe.

    ``path``: the endpoint path (``None`` serves every path this app is mounted at).
    ``allowed_hosts``/``allowed_origins``: see :class:`~mcpsync.http.security.HostPolicy`
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

    def __init__(
        self,
        server: ServerCore,
        *,
        path: str | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = 4 * 1024 * 1024,
        json_window: float = 0.5,
        keepalive_interval: float = 15.0,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 1000,
        session_handshake_timeout: float = 10.0,
        max_sessions_per_principal: int | None = None,
        max_sessions_per_address: int | None = None,
        event_store: EventStore | object | None = _DEFAULT_STORE,
        session_store: SessionStore | None = None,
        retry_ms: int = 1000,
        legacy_sessions: bool = True,
        sse_path: str | None = "/sse",
        messages_path: str = "/messages",
        auth: ResourceServer | None = None,
        bus: Bus | None = None,
        store_budget: float | None = 10.0,
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.policy = HostPolicy(allowed_hosts, allowed_origins)
        self.max_body_bytes = max_body_bytes
        self.json_window = json_window
        self.keepalive_interval = keepalive_interval
        self.retry_ms = retry_ms
        self.legacy_sessions = legacy_sessions
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.auth = auth
        if store_budget is not None and not store_budget > 0:
            raise ValueError("store_budget must be positive (or None)")
        self.store_budget = store_budget
        store: EventStore | None = (InMemoryEventStore() if event_store is _DEFAULT_STORE
                                    else event_store)  # type: ignore[assignment]
        self.store = store
        if bus is not None and (store is None or session_store is None):
            raise ValueError("bus= relays between workers through their shared stores: "
                             "give a shared session_store and event_store too")
        self.relay = Relay(bus) if bus is not None else None
        #: The server's own events (2026-07-28 listen streams, task statuses) go over
        #: the same bus: a change made on any worker reaches the listens held on this one.
        self._stop_events = server.relay_events(bus) if bus is not None else None
        # One pool for every handler of this app (2026-07-28 requests and every
        # handshake-era session): max_concurrent_handlers bounds the app, not each session.
        self._pool = HandOffPool(server.max_concurrent_handlers, name="mcpsync-http-handler",
                                 max_backlog=4 * server.max_concurrent_handlers)
        self.sessions = SessionRegistry(server, store, idle_timeout=session_idle_timeout,
                                        max_sessions=max_sessions, session_store=session_store,
                                        handshake_timeout=session_handshake_timeout,
                                        pool=self._pool, relay=self.relay,
                                        max_per_principal=max_sessions_per_principal,
                                        max_per_address=max_sessions_per_address)
        if self.relay is not None and self.sessions.shared is not None:
            server.resource_update_hooks.append(self.sessions.resource_updated)
        self._header_maps: dict[int, dict[str, tuple[str, ...]] | None] = {}
        #: Context-free tools seen to take over half ``json_window`` on a handshake-era
        #: POST's thread: they run on the pool from then on (``legacy.py``). Names of
        #: registered tools only, so bounded by the server's tool count.
        self.slow_tools: set[str] = set()
        self._closed = threading.Event()
        self._local = threading.local()
        self._warn_lock = threading.Lock()
        self._warned_single = False
        self._warned_fork = False

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
        headers = request_headers(environ)
        host = headers.get("host") or environ.get("SERVER_NAME")
        if not self.policy.host_allowed(host):
            return self._plain_error(start_response, "403 Forbidden", INVALID_REQUEST,
                                     f"Forbidden: Host {host!r} is not allowed")
        if not self.policy.origin_allowed(headers.get("origin")):
            return self._plain_error(start_response, "403 Forbidden", INVALID_REQUEST,
                                     f"Forbidden: Origin {headers.get('origin')!r} is not allowed")
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO") or "/"
        self._local.owner = self._local.token = None
        if self.auth is not None:
            if (path in self.auth.metadata_paths
                    or (environ.get("SCRIPT_NAME", "") + (environ.get("PATH_INFO") or ""))
                    in self.auth.metadata_paths):
                return self._metadata(method, start_response)
            refused = self._authenticate(environ, headers, start_response)
            if refused is not None:
                return refused
        if self.relay is not None and self.relay.pid != os.getpid():
            return self._forked_relay(start_response)
        try:
            # Startup happens at the first request of each process (a gunicorn worker, not
            # the master that imported the app under --preload), unless start() ran it.
            self.server.start()
        except StartupError as exc:
            return self._plain_error(start_response, "503 Service Unavailable", INTERNAL_ERROR,
                                     f"Service unavailable: {exc}")
        if environ.get("wsgi.multithread") is False:
            self._warn_single_threaded(environ)
            if method == "GET" and (path == self.sse_path or self.path is None
                                    or (path.rstrip("/") or "/") == self.path):
                return self._single_threaded_get(environ, path, start_response)
        # Where the WSGI server lets us see it: lets a quiet SSE stream, or a wait for a
        # JSON answer, notice a departed client at once instead of at its next write.
        self._local.peer = _peer_probe(environ)
        try:
            if self.legacy_sessions and self.sse_path is not None:
                if path == self.sse_path:
                    # Reserved for the old transport, whatever ``path`` says: a client that
                    # POSTs here first (as the spec's fallback has it) must be refused so
                    # that it goes on to GET the stream.
                    if method != "GET":
                        return self._plain_error(
                            start_response, "405 Method Not Allowed", INVALID_REQUEST,
                            "Method not allowed: this is the HTTP+SSE stream; GET it",
                            extra=[("Allow", "GET")])
                    return legacy_sse.open_stream(self, environ, headers, start_response)
                if path == self.messages_path and method == "POST":
                    return legacy_sse.post(self, environ, headers, start_response)
            if self.path is not None and (path.rstrip("/") or "/") != self.path:
                return self._plain_error(start_response, "404 Not Found", INVALID_REQUEST,
                                         f"Not found: {path}")
            if method == "POST":
                return self._post(environ, headers, start_response)
            if method == "GET":
                return legacy.get(self, headers, start_response)
            if method == "DELETE":
                return legacy.delete(self, headers, start_response)
            return self._method_not_allowed(start_response)
        except _HttpError as exc:
            return self._plain_error(start_response, exc.status, exc.code, exc.message,
                                     exc.msg_id, exc.data)
        except StoreUnavailableError as exc:
            # A shared store (Redis) is down: a clear, retryable refusal, never a hang.
            logger.warning("shared store unavailable: %s", exc)
            return self._plain_error(start_response, "503 Service Unavailable",
                                     INTERNAL_ERROR, f"Service unavailable: {exc}",
                                     extra=[("Retry-After", "1")])

    def _forked_relay(self, start_response: StartResponse) -> Iterable[bytes]:
        # The relay's thread and bus subscription stayed in the parent: serving here would
        # silently drop every answer, cancel and GET-stream message from other workers.
        with self._warn_lock:
            if not self._warned_fork:
                self._warned_fork = True
                logger.error("mcpsync: this app was built with bus= before the worker "
                             "process forked (gunicorn --preload?); build it in each "
                             "worker (no --preload, or in post_fork): see docs/deploying.md")
        return self._plain_error(start_response, "503 Service Unavailable", INTERNAL_ERROR,
                                 "Service unavailable: the relay between workers was started "
                                 "in another process (built before a fork)")

    # -- authorization (auth=ResourceServer) ---------------------------------------------

    def _metadata(self, method: str, start_response: StartResponse) -> Iterable[bytes]:
        """RFC 9728 Protected Resource Metadata: public, so that a client without a token
        learns where to get one (CORS-readable, for browser-based clients)."""
        assert self.auth is not None
        if method not in ("GET", "HEAD"):
            return self._method_not_allowed(start_response)
        body = self.auth.metadata_json()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(body))),
                                  ("Access-Control-Allow-Origin", "*"),
                                  ("Cache-Control", "max-age=3600")])
        return [b""] if method == "HEAD" else [body]

    def _authenticate(self, environ: Environ, headers: dict[str, str],
                      start_response: StartResponse) -> Iterable[bytes] | None:
        """Check the request's bearer token: ``None`` and the verified token stored for
        this request (``ctx.auth``, the session's owner), or the 401/403 already answered.
        The refusal never repeats the token."""
        assert self.auth is not None
        verdict = self.auth.authenticate(headers.get("authorization"))
        if isinstance(verdict, Refusal):
            return self._refuse(start_response, verdict)
        environ[AUTH_ENVIRON_KEY] = verdict
        self._local.owner = verdict.principal
        self._local.token = verdict
        return None

    def _refuse(self, start_response: StartResponse, refusal: Refusal,
                msg_id: Any = None) -> list[bytes]:
        message = {None: "Unauthorized: this server needs an OAuth bearer token",
                   "invalid_token": "Unauthorized: the access token is not valid here",
                   "invalid_request": "Unauthorized: send the token as Authorization: Bearer",
                   "insufficient_scope": "Forbidden: the access token lacks a needed scope",
                   }.get(refusal.error, "Unauthorized")
        return self._plain_error(start_response, refusal.status, INVALID_REQUEST, message,
                                 msg_id, extra=[("WWW-Authenticate", refusal.challenge)])

    def owner(self) -> Any:
        """The principal of the request this thread is serving (``None`` without auth):
        the owner a handshake-era session is created with and checked against."""
        return getattr(self._local, "owner", None)

    def _scope_refusal(self, items: list[Any]) -> Refusal | None:
        """A 403 for a request needing ``scopes`` the token lacks (a tool, a resource read
        or subscribed to, a prompt: :func:`~mcpsync.server.scopes.required_scopes`),
        before it is dispatched, so the client gets the challenge it can step up with."""
        if self.auth is None:
            return None
        token = getattr(self._local, "token", None)
        for item in items:
            if not isinstance(item, Request) or token is None:
                continue
            needed = required_scopes(self.server, item.method, item.params)
            if needed is not None and not token.has_scopes(needed.scopes):
                return self.auth.insufficient_scope(token, needed.scopes)
        return None

    def _single_threaded_get(self, environ: Environ, path: str,
                             start_response: StartResponse) -> Iterable[bytes]:
        """A GET on a server that runs one request at a time per process (gunicorn's
        default ``sync`` worker, a non-threaded werkzeug): a stream would hold the only
        thread, and the session's next POST would wait behind it for ever. So no
        standalone stream (405, which the spec lets a server answer and clients expect),
        and no 2024-11-05 HTTP+SSE stream (503, saying why)."""
        if self.legacy_sessions and self.sse_path is not None and path == self.sse_path:
            return self._plain_error(
                start_response, "503 Service Unavailable", INTERNAL_ERROR,
                "Service unavailable: the HTTP+SSE transport needs a WSGI server that serves "
                "requests concurrently (gunicorn -k gthread), not one request at a time")
        return self._method_not_allowed(start_response)

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

    # -- the inbound path ----------------------------------------------------------------

    def _executor(self) -> InboundExecutor:
        """The server's middleware as it is now (like a session, a request takes a copy)."""
        return InboundExecutor(self.server.recv_middleware, self.server.send_middleware,
                               name="mcpsync-http")

    @staticmethod
    def _transport(environ: Environ, headers: dict[str, str], session_id: str | None,
                   ) -> TransportContext:
        """The TransportContext of the messages of one HTTP request: a handshake-era
        session's (``session_id``) can be sent requests, a 2026-07-28 one's can not."""
        remote = environ.get("REMOTE_ADDR")
        return TransportContext("http", headers=Headers.lowered(
                                    _without_credentials(headers) if AUTH_ENVIRON_KEY in environ
                                    else headers),
                                remote_addr=remote if isinstance(remote, str) else None,
                                session_id=session_id, can_receive_requests=session_id is not None,
                                auth=environ.get(AUTH_ENVIRON_KEY))

    # -- responses -----------------------------------------------------------------------

    def _json(self, start_response: StartResponse, status: str, body: bytes,
              extra: list[tuple[str, str]] | None = None) -> list[bytes]:
        return json_reply(start_response, status, body, extra)

    def _plain_error(self, start_response: StartResponse, status: str, code: int, message: str,
                     msg_id: Any = None, data: Any = None,
                     extra: list[tuple[str, str]] | None = None) -> list[bytes]:
        return error_reply(start_response, status, code, message, msg_id, data, extra)

    def _method_not_allowed(self, start_response: StartResponse) -> list[bytes]:
        return method_not_allowed(start_response)

    def _read_body(self, environ: Environ) -> bytes:
        """The request body, never more than ``max_body_bytes`` of it read, whatever the
        framing claims; malformed framing is a 400 with a JSON-RPC body."""
        try:
            return self._read_framed(environ)
        except _HttpError:
            raise
        except Exception as exc:
            # The WSGI server's own framing errors surface here, as whatever it raises: a
            # chunk size that is not hex, a body cut short, a client gone mid-body.
            logger.debug("unreadable request body: %r", exc)
            raise _HttpError("400 Bad Request", INVALID_REQUEST,
                             "Bad request: malformed request body framing") from None

    def _read_framed(self, environ: Environ) -> bytes:
        length_text = str(environ.get("CONTENT_LENGTH") or "").strip()
        stream = environ["wsgi.input"]
        if length_text:
            # Digits only: int() would take "-1" (which some servers then read as "to
            # EOF"), "+5" or "1_0".
            length = parse_decimal(length_text)
            if length is None:
                raise _HttpError("400 Bad Request", INVALID_REQUEST,
                                 "Bad request: invalid Content-Length")
            if length > self.max_body_bytes:
                raise _HttpError("413 Content Too Large", INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes")
            data = bytes(stream.read(length))
            if len(data) != length:
                raise _HttpError("400 Bad Request", INVALID_REQUEST,
                                 "Bad request: the body ended before Content-Length bytes")
            return data
        if environ.get("wsgi.input_terminated") or environ.get("HTTP_TRANSFER_ENCODING"):
            data = bytes(stream.read(self.max_body_bytes + 1))
            if len(data) > self.max_body_bytes:
                raise _HttpError("413 Content Too Large", INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes")
            return data
        return b""

    # -- POST ----------------------------------------------------------------------------

    def _post(self, environ: Environ, headers: dict[str, str],
              start_response: StartResponse) -> Iterable[bytes]:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise _HttpError("415 Unsupported Media Type", INVALID_REQUEST,
                             "Unsupported media type: send Content-Type: application/json")
        want_json, want_sse = _accepts(headers)
        if not want_json and not want_sse:
            raise _HttpError("406 Not Acceptable", INVALID_REQUEST,
                             "Not acceptable: accept application/json and text/event-stream")
        body = self._read_body(environ)
        batch = jsonrpc.is_batch(body)
        items = jsonrpc.decode(body)
        if not items:
            raise _HttpError("400 Bad Request", INVALID_REQUEST, "Invalid request: empty body")
        if not batch and isinstance(items[0], Invalid):
            reply = items[0].reply
            error: dict[str, Any] = reply.error if reply is not None else {
                "code": INVALID_REQUEST, "message": items[0].reason}
            raise _HttpError("400 Bad Request", int(error["code"]), str(error["message"]),
                             reply.id if reply is not None else None)
        refusal = self._scope_refusal(items)
        if refusal is not None:
            return self._refuse(start_response, refusal, getattr(items[0], "id", None))
        session_id = headers.get("mcp-session-id")
        first = items[0]
        if not batch and isinstance(first, (Request, Notification)) and self._is_modern(
                first, headers):
            if isinstance(first, Notification):
                # Nothing to route it to without a session, but middleware sees it.
                transport = self._transport(environ, headers, None)
                self._executor().receive(first, transport, lambda _: None, lambda _: None)
                start_response("202 Accepted", [("Content-Length", "0")])
                return [b""]
            return modern.serve(self, first, environ, headers, start_response)
        if not self.legacy_sessions:
            raise _HttpError("400 Bad Request", INVALID_PARAMS,
                             "Invalid params: this server speaks 2026-07-28 only; put "
                             f"{envelope.META_VERSION!r} in the request's _meta",
                             getattr(first, "id", None))
        if session_id:
            session = self.sessions.get(session_id, self.owner())
            if session is None:
                raise _HttpError("404 Not Found", SESSION_NOT_FOUND, "Session not found",
                                 getattr(first, "id", None))
            return legacy.post(self, session, items, batch, environ, headers,
                               start_response)
        if not batch and isinstance(first, Request) and first.method == "initialize":
            return legacy.initialize(self, first, environ, headers, start_response)
        if batch and any(isinstance(i, Request) and i.method == "initialize" for i in items):
            raise _HttpError("400 Bad Request", INVALID_REQUEST,
                             "Invalid request: initialize cannot be batched")
        raise _HttpError("400 Bad Request", INVALID_REQUEST,
                         "Bad request: no Mcp-Session-Id header (send initialize first), and "
                         f"no {envelope.META_VERSION!r} in _meta (2026-07-28)",
                         getattr(first, "id", None))

    def _is_modern(self, message: Request | Notification, headers: dict[str, str]) -> bool:
        if not self.server.modern_versions:
            return False
        if is_stateless(message.params):
            return True
        version = headers.get("mcp-protocol-version")
        return version is not None and version not in self.server.legacy_versions and (
            not headers.get("mcp-session-id"))


def _without_credentials(headers: dict[str, str]) -> dict[str, str]:
    """The headers handlers and middleware see: with ``auth=`` the verified token is
    ``ctx.auth``, and the raw ``Authorization`` value is not handed on (so it cannot end
    up in a log line that prints the headers)."""
    if "authorization" not in headers:
        return headers
    return {k: v for k, v in headers.items() if k != "authorization"}


def close_sse_stream(ctx: Any) -> bool:
    """``ctx.close_sse_stream()``, kept as a function for code written against it: close the
    client's connection to the SSE stream of ``ctx``'s request now, leaving the request
    running (handshake era, 2025-11-25 polling). ``False`` where that does not apply."""
    return bool(ctx.close_sse_stream())
