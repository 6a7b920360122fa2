"""Everything the app reads and checks about an HTTP request before it is dispatched.

The app makes one :class:`Intake` and calls :meth:`Intake.read` once per request: it runs
every step below in turn and hands back an :class:`HttpRequest`, the request as the rest
of the app sees it (its route, headers, decoded messages, transport context, principal),
or raises the refusal. The era handlers read that object's fields; they never come back
here. The steps, in the order a request meets them:

* **Headers and transport context** (:func:`request_headers`, :func:`transport_context`):
  what one HTTP request looks like to the rest of mcpsync, read from its WSGI ``environ``.
  Shared by the app's router (``wsgi.py``) and the era handlers (``modern.py``,
  ``legacy.py``, ``legacy_sse.py``).
* **DNS-rebinding protection** (:class:`HostPolicy`): which ``Host`` and ``Origin``
  headers a server accepts. A browser page on ``evil.example`` can resolve that name to
  127.0.0.1 and talk to a local server; checking ``Host`` (the name the browser thinks it
  is talking to) and ``Origin`` (the page that sent the request) stops it. The default
  accepts only loopback names.
* **Authorization** (``wsgi_app(auth=ResourceServer(...))``, :class:`AuthGate`): it serves
  the Protected Resource Metadata, checks each request's bearer token (401/403 with a
  ``WWW-Authenticate`` challenge, which never repeats the token), remembers on the
  request's thread who it is (the owner a handshake-era session is created with and
  checked against), and refuses before dispatch a request needing per-item OAuth scopes
  the token lacks (a 403 the client can step up with). The resource server itself
  (:class:`~mcpsync.auth.server.ResourceServer`) holds no state per request; this does.
* **The body** (:class:`BodyReader`): never more than ``max_body_bytes`` of it read,
  whatever its framing claims. Malformed framing is a 400 with a JSON-RPC body, too large
  a body a 413, before any of it reaches a parser.

* **This process** (:class:`Readiness`): whether it can serve at all (its server started,
  its relay not left behind in a parent process, a stream not asked of a WSGI server
  that serves one request at a time): a 503 (or 405) before the request is looked at
  further, whatever it asks.
* **The route** (:meth:`Intake.read`): which endpoint the method and path name (the
  Streamable HTTP endpoint's POST, GET or DELETE, the 2024-11-05 ``/sse`` stream and
  messages path, the metadata), a 404 or 405 for anything else; for a POST to the
  endpoint its ``Content-Type`` and ``Accept`` are checked, its body read and decoded,
  and its per-item OAuth scopes checked, all before any handler, thread or session.

They live together because each is one step of the app's intake, run in turn before a
request reaches its era's handler; the refusals they raise are the app's
:class:`~mcpsync.http.replies._HttpError`, answered like every other.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlsplit

from ..auth.server.resource import SERVER_ERROR, Refusal
from ..dispatch.inbound import Headers, TransportContext
from ..dispatch.principal import Principal
from ..errors import INTERNAL_ERROR, INVALID_REQUEST, MCPError
from ..protocol import jsonrpc
from ..protocol.decoding import parse_decimal
from ..protocol.jsonrpc import Invalid, Message, Notification, Request
from ..protocol.versions import is_stateless
from ..server.lifespan import StartupError
from ..server.scopes import Catalog, required_scopes
from .replies import Environ, StartResponse, _HttpError, method_not_allowed

if TYPE_CHECKING:
    from ..auth.server.resource import ResourceServer
    from ..server.options import ProtocolOptions

logger = logging.getLogger("mcpsync.http")

# -- headers and the transport context ----------------------------------------------------

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


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
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


def transport_context(environ: dict[str, Any], headers: dict[str, str],
                      session_id: str | None) -> TransportContext:
    """The TransportContext of the messages of one HTTP request: a handshake-era
    session's (``session_id``) can be sent requests, a 2026-07-28 one's can not."""
    remote = environ.get("REMOTE_ADDR")
    return TransportContext("http", headers=Headers.lowered(
                                _without_credentials(headers) if AUTH_ENVIRON_KEY in environ
                                else headers),
                            remote_addr=remote if isinstance(remote, str) else None,
                            session_id=session_id, can_receive_requests=session_id is not None,
                            auth=environ.get(AUTH_ENVIRON_KEY))


def _without_credentials(headers: dict[str, str]) -> dict[str, str]:
    """The headers handlers and middleware see: with ``auth=`` the verified token is
    ``ctx.auth``, and the raw ``Authorization`` value is not handed on (so it cannot end
    up in a log line that prints the headers)."""
    if "authorization" not in headers:
        return headers
    return {k: v for k, v in headers.items() if k != "authorization"}


# -- Host and Origin ----------------------------------------------------------------------

LOOPBACK: Final = ("localhost", "127.0.0.1", "[::1]", "::1")
_MAX_VERDICTS: Final = 256
_MAX_VERDICT_KEY: Final = 255


def _split_host(value: str) -> tuple[str, str | None]:
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    host, colon, port = value.rpartition(":")
    if colon and port.isdigit():
        return host, port
    return value, None


class HostPolicy:
    """Allowed ``Host`` and ``Origin`` values. Immutable, thread-safe.

    ``allowed_hosts`` entries are ``name`` (any port), ``name:port``, ``*.suffix``, or
    ``*`` (no check: only behind a proxy that checks). ``allowed_origins`` entries are
    origins such as ``https://app.example.com`` or ``*``; by default an origin is accepted
    when its host is an allowed host.
    """

    def __init__(self, allowed_hosts: Iterable[str] | None = None,
                 allowed_origins: Iterable[str] | None = None) -> None:
        self.allowed_hosts = tuple(h.lower() for h in (allowed_hosts or LOOPBACK))
        self.allowed_origins = tuple(o.lower().rstrip("/") for o in (allowed_origins or ()))
        #: Verdicts already reached, by ``Host`` value: every request asks, and a client
        #: sends the same value each time. The policy never changes, so a verdict never
        #: goes stale. Bounded (clients choose the values): at most ``_MAX_VERDICTS``
        #: values of at most ``_MAX_VERDICT_KEY`` characters (~80 KiB at worst); the
        #: rest are checked each time.
        self._host_verdicts: dict[str, bool] = {}

    def host_allowed(self, host_header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        verdicts = self._host_verdicts
        verdict = verdicts.get(host_header)
        if verdict is None:
            verdict = self._name_allowed(host_header)
            if len(verdicts) < _MAX_VERDICTS and len(host_header) <= _MAX_VERDICT_KEY:
                verdicts[host_header] = verdict  # a racing thread writes the same value
        return verdict

    def _name_allowed(self, value: str) -> bool:
        host, port = _split_host(value)
        for entry in self.allowed_hosts:
            entry_host, entry_port = _split_host(entry)
            if entry_host.startswith("*."):
                if not host.endswith(entry_host[1:]):
                    continue
            elif entry_host != host:
                continue
            if entry_port is None or entry_port == port:
                return True
        return False

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True  # not a browser, or a same-origin GET: nothing to check
        origin = origin.strip().lower().rstrip("/")
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return "*" in self.allowed_hosts or self._name_allowed(parts.netloc)


# -- authorization ------------------------------------------------------------------------

class AuthGate:
    """One app's check of bearer tokens and scopes, and who the request this thread is
    serving belongs to. Thread-safe (the principal is kept per thread)."""

    def __init__(self, auth: ResourceServer | None, server: Catalog) -> None:
        self.auth = auth
        self._server = server
        self._local = threading.local()

    def begin(self) -> None:
        """A new request on this thread: nobody, until :meth:`authenticate` says."""
        self._local.owner = self._local.token = None

    def owner(self) -> Principal | None:
        """The principal of the request this thread is serving (``None`` without auth):
        the owner a handshake-era session is created with and checked against."""
        return getattr(self._local, "owner", None)

    def metadata(self, method: str, start_response: StartResponse) -> Iterable[bytes]:
        """RFC 9728 Protected Resource Metadata: public, so that a client without a token
        learns where to get one (CORS-readable, for browser-based clients)."""
        assert self.auth is not None
        if method not in ("GET", "HEAD"):
            raise method_not_allowed()
        body = self.auth.metadata_json()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(body))),
                                  ("Access-Control-Allow-Origin", "*"),
                                  ("Cache-Control", "max-age=3600")])
        return [b""] if method == "HEAD" else [body]

    def authenticate(self, environ: Environ, headers: dict[str, str]) -> Principal | None:
        """Check the request's bearer token and store the verified token for this request
        (``ctx.auth``, the session's owner); return its principal. Raise the 401/403
        refusal (to be answered like every other, through the send middleware). It never
        repeats the token."""
        assert self.auth is not None
        verdict = self.auth.authenticate(headers.get("authorization"))
        if isinstance(verdict, Refusal):
            raise self.refuse(verdict)
        environ[AUTH_ENVIRON_KEY] = verdict
        self._local.owner = verdict.principal
        self._local.token = verdict
        return verdict.principal

    def refuse(self, refusal: Refusal, msg_id: Any = None) -> _HttpError:
        """``refusal`` as the app's refusal to raise: its status and challenge kept."""
        if refusal.error == SERVER_ERROR:  # the verifier failed: no challenge to answer
            return _HttpError(INTERNAL_ERROR, "Internal error: the server could not check "
                              "the access token", msg_id, status=refusal.status)
        message = {None: "Unauthorized: this server needs an OAuth bearer token",
                   "invalid_token": "Unauthorized: the access token is not valid here",
                   "invalid_request": "Unauthorized: send the token as Authorization: Bearer",
                   "insufficient_scope": "Forbidden: the access token lacks a needed scope",
                   }.get(refusal.error, "Unauthorized")
        return _HttpError(INVALID_REQUEST, message, msg_id, status=refusal.status,
                          extra=[("WWW-Authenticate", refusal.challenge)])

    def scope_refusal(self, items: list[Any]) -> Refusal | None:
        """A 403 for a request needing ``scopes`` the token lacks (a tool, a resource read
        or subscribed to, a prompt: :func:`~mcpsync.server.scopes.required_scopes`),
        before it is dispatched, so the client gets the challenge it can step up with."""
        if self.auth is None:
            return None
        token = getattr(self._local, "token", None)
        for item in items:
            if not isinstance(item, Request) or token is None:
                continue
            needed = required_scopes(self._server, item.method, item.params)
            if needed is not None and not token.has_scopes(needed.scopes):
                return self.auth.insufficient_scope(token, needed.scopes)
        return None


# -- the body -----------------------------------------------------------------------------

class BodyReader:
    """Reads the bodies of one app's requests, up to ``max_body_bytes``. Stateless
    between requests, so thread-safe."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes

    def read(self, environ: Environ) -> bytes:
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
            raise _HttpError(INVALID_REQUEST,
                             "Bad request: malformed request body framing") from None

    def _read_framed(self, environ: Environ) -> bytes:
        length_text = str(environ.get("CONTENT_LENGTH") or "").strip()
        stream = environ["wsgi.input"]
        if length_text:
            # Digits only: int() would take "-1" (which some servers then read as "to
            # EOF"), "+5" or "1_0".
            length = parse_decimal(length_text)
            if length is None:
                raise _HttpError(INVALID_REQUEST,
                                 "Bad request: invalid Content-Length")
            if length > self.max_body_bytes:
                raise _HttpError(INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes",
                                 status="413 Content Too Large")
            data = bytes(stream.read(length))
            if len(data) != length:
                raise _HttpError(INVALID_REQUEST,
                                 "Bad request: the body ended before Content-Length bytes")
            return data
        if environ.get("wsgi.input_terminated") or environ.get("HTTP_TRANSFER_ENCODING"):
            data = bytes(stream.read(self.max_body_bytes + 1))
            if len(data) > self.max_body_bytes:
                raise _HttpError(INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes",
                                 status="413 Content Too Large")
            return data
        return b""


# -- the client's connection --------------------------------------------------------------

def _peer_gone(sock: Any) -> bool:
    """Whether the client closed its end of the connection (EOF is readable, no data)."""
    import socket

    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"")
    except (BlockingIOError, InterruptedError):
        return False
    except (ValueError, AttributeError, TypeError):
        return False  # cannot tell (a TLS socket refuses MSG_PEEK): wait for the keep-alive
    except OSError:
        return True  # reset, or closed


def peer_probe(environ: Environ) -> Callable[[], bool] | None:
    """A check of whether the client has left, where the WSGI server offers one: the socket
    (werkzeug, gunicorn), or waitress's ``client_disconnected`` (which only ever says so
    when waitress reads ahead: ``channel_request_lookahead`` of 1 or more)."""
    sock = environ.get("werkzeug.socket") or environ.get("gunicorn.socket")
    if sock is not None:
        return lambda: _peer_gone(sock)
    check = environ.get("waitress.client_disconnected")
    if callable(check):
        return lambda: bool(check())
    return None


def accepts(headers: dict[str, str]) -> tuple[bool, bool]:
    """(JSON acceptable, SSE acceptable) from ``Accept``; absent or ``*/*`` means both."""
    accept = headers.get("accept", "").lower()
    if not accept.strip() or "*/*" in accept:
        return True, True
    return ("application/json" in accept or "application/*" in accept,
            "text/event-stream" in accept or "text/*" in accept)


# -- this process ------------------------------------------------------------------------

class Readiness:
    """Whether this process can serve a request now: the relay between workers was not
    started in a parent process, the server has started (its startup runs at the first
    request of each process), and a stream is not asked of a WSGI server that serves one
    request at a time. Checked after the caller is known and before the route, so a
    process that cannot serve says so (503) whatever the request. Each failure is logged
    once. Thread-safe (one lock for the logging state)."""

    def __init__(self, start: Callable[[], object], relay_pid: int | None) -> None:
        self._start = start
        #: The process the relay's thread runs in (``None``: no relay).
        self._relay_pid = relay_pid
        self._lock = threading.Lock()
        self._startup_failure: StartupError | None = None  # the one logged
        self._warned_single = False
        self._warned_fork = False

    def check(self, environ: Environ, stream_get: bool, sse_stream: bool) -> None:
        """Raise the refusal if this process cannot serve the request. ``stream_get``: it
        GETs a stream (of the endpoint or, ``sse_stream``, of the 2024-11-05 path)."""
        if self._relay_pid is not None and self._relay_pid != os.getpid():
            raise self._forked_relay()
        try:
            # Startup happens at the first request of each process (a gunicorn worker, not
            # the master that imported the app under --preload), unless start() ran it.
            self._start()
        except StartupError as exc:
            # The app answers the failure rather than raising it: so it logs it, once
            # (the same failure is met again by every request until a restart).
            with self._lock:
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
            if stream_get:
                raise self._single_threaded_get(sse_stream)

    def _forked_relay(self) -> _HttpError:
        # The relay's thread and bus subscription stayed in the parent: serving here would
        # silently drop every answer, cancel and GET-stream message from other workers.
        with self._lock:
            first, self._warned_fork = not self._warned_fork, True
        if first:
            logger.error("mcpsync: this app was built with bus= before the worker "
                         "process forked (gunicorn --preload?); build it in each "
                         "worker (no --preload, or in post_fork): see docs/deploying.md")
        return _HttpError(INTERNAL_ERROR, "Service unavailable: the relay between workers "
                          "was started in another process (built before a fork)")

    @staticmethod
    def _single_threaded_get(sse_stream: bool) -> _HttpError:
        """A GET on a server that runs one request at a time per process (gunicorn's
        default ``sync`` worker, a non-threaded werkzeug): a stream would hold the only
        thread, and the session's next POST would wait behind it for ever. So no
        standalone stream (405, which the spec lets a server answer and clients expect),
        and no 2024-11-05 HTTP+SSE stream (503, saying why)."""
        if sse_stream:
            return _HttpError(
                INTERNAL_ERROR,
                "Service unavailable: the HTTP+SSE transport needs a WSGI server that serves "
                "requests concurrently (gunicorn -k gthread), not one request at a time")
        return method_not_allowed()

    def _warn_single_threaded(self, environ: Environ) -> None:
        with self._lock:
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


# -- the intake ---------------------------------------------------------------------------

#: The routes :meth:`Intake.read` tells apart (:attr:`HttpRequest.route`).
MODERN: Final = "modern"        # a POST of one 2026-07-28 request or notification
POST: Final = "post"            # any other POST to the endpoint: the handshake era's
GET: Final = "get"              # a GET of the endpoint: a handshake-era session's stream
DELETE: Final = "delete"        # a DELETE of the endpoint: a session ends
SSE_STREAM: Final = "sse"       # GET {sse_path}: a 2024-11-05 HTTP+SSE stream
SSE_MESSAGES: Final = "messages"  # POST {messages_path}: a 2024-11-05 client's message
METADATA: Final = "metadata"    # the Protected Resource Metadata (under ``auth=``)


class HttpRequest:
    """One HTTP request read and checked by :meth:`Intake.read`: plain fields, read by the
    app and its era handlers (nothing here is computed later). Not shared between
    threads (one per request)."""

    __slots__ = ("accepts", "batch", "environ", "headers", "items", "method", "owner",
                 "path", "peer", "route", "transport")

    def __init__(self, environ: Environ, headers: dict[str, str], method: str, path: str,
                 route: str) -> None:
        self.environ = environ
        #: Lower-cased header names (see :func:`request_headers`).
        self.headers = headers
        self.method = method
        self.path = path
        #: Which endpoint (and, for a POST, which era): :data:`MODERN`, :data:`POST`,
        #: :data:`GET`, :data:`DELETE`, :data:`SSE_STREAM`, :data:`SSE_MESSAGES` or
        #: :data:`METADATA`.
        self.route = route
        #: (JSON acceptable, SSE acceptable), from ``Accept``.
        self.accepts = accepts(headers)
        #: A :data:`POST`'s decoded messages (never empty), and whether it was a batch.
        self.items: list[Message | Invalid] = []
        self.batch = False
        #: The principal of the verified token (``None`` without ``auth=``).
        self.owner: Principal | None = None
        #: A POST's messages' context: without a session in 2026-07-28; with the
        #: ``Mcp-Session-Id`` it names in the handshake era (``initialize``, which has
        #: none yet, takes ``transport.for_session(id)`` once it has one).
        self.transport: TransportContext | None = None
        #: Whether the client has left, where the WSGI server lets the app see it.
        self.peer: Callable[[], bool] | None = None


class VersionsSpoken(Protocol):
    """What the intake needs of the server to tell the eras apart."""

    @property
    def protocol(self) -> ProtocolOptions: ...


class Intake:
    """One app's intake: every check a request meets before it is dispatched, run in
    order by :meth:`read`. Immutable after construction (the per-request state is on the
    :class:`HttpRequest` and, for the principal, on the :class:`AuthGate`'s thread), so
    thread-safe."""

    def __init__(self, server: VersionsSpoken, policy: HostPolicy, gate: AuthGate,
                 body: BodyReader, readiness: Readiness, *, path: str | None,
                 sse_path: str | None, messages_path: str, legacy_sessions: bool) -> None:
        self.server = server
        self.policy = policy
        self.gate = gate
        self.body = body
        self.readiness = readiness
        #: The endpoint's path (``None``: every path the app is mounted at).
        self.path = path
        #: The 2024-11-05 paths, reserved for that transport when it is served.
        self.sse_path = sse_path if legacy_sessions else None
        self.messages_path = messages_path

    def read(self, environ: Environ) -> HttpRequest:
        """The request of ``environ``, read and checked: Host and Origin, the bearer
        token, whether this process can serve it (:class:`Readiness`), the route (404/405
        for none), and for a POST to the endpoint its media types, its body, its messages
        and their scopes, and which era it belongs to. Raises the refusal."""
        headers = request_headers(environ)
        host = headers.get("host") or environ.get("SERVER_NAME")
        policy = self.policy
        if not policy.host_allowed(host):
            raise _HttpError(INVALID_REQUEST, f"Forbidden: Host {host!r} is not allowed",
                             status="403 Forbidden")
        if not policy.origin_allowed(headers.get("origin")):
            raise _HttpError(INVALID_REQUEST,
                             f"Forbidden: Origin {headers.get('origin')!r} is not allowed",
                             status="403 Forbidden")
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO") or "/"
        gate = self.gate
        auth = gate.auth
        owner: Principal | None = None
        if auth is not None:
            gate.begin()  # (without auth nobody is ever remembered: nothing to forget)
            if (path in auth.metadata_paths
                    or (environ.get("SCRIPT_NAME", "") + (environ.get("PATH_INFO") or ""))
                    in auth.metadata_paths):
                return HttpRequest(environ, headers, method, path, METADATA)
            owner = gate.authenticate(environ, headers)
        if method == "GET":
            sse = path == self.sse_path
            self.readiness.check(environ, sse or self.path is None
                                 or (path.rstrip("/") or "/") == self.path, sse)
        else:
            self.readiness.check(environ, False, False)
        route = self._route(method, path)
        request = HttpRequest(environ, headers, method, path, route)
        request.owner = owner
        request.peer = peer_probe(environ)
        if route == POST:
            self._read_post(request)
            session_id = headers.get("mcp-session-id")
            first = request.items[0]
            if not request.batch and isinstance(first, (Request, Notification)) and (
                    self._is_modern(first, headers, session_id)):
                request.route = MODERN
                session_id = None
            request.transport = transport_context(environ, headers, session_id)
        return request

    def _is_modern(self, message: Request | Notification, headers: dict[str, str],
                   session_id: str | None) -> bool:
        """Whether a POST's one message is a 2026-07-28 one: its ``_meta`` says so, or
        (with no session) its ``MCP-Protocol-Version`` header names no handshake era."""
        server = self.server
        if not server.protocol.modern_versions:
            return False
        if is_stateless(message.params):
            return True
        version = headers.get("mcp-protocol-version")
        return version is not None and version not in server.protocol.legacy_versions and (
            not session_id)

    def _route(self, method: str, path: str) -> str:
        if self.sse_path is not None:
            if path == self.sse_path:
                # Reserved for the old transport, whatever ``path`` says: a client that
                # POSTs here first (as the spec's fallback has it) must be refused so
                # that it goes on to GET the stream.
                if method != "GET":
                    raise _HttpError(INVALID_REQUEST,
                                     "Method not allowed: this is the HTTP+SSE stream; GET it",
                                     status="405 Method Not Allowed", extra=[("Allow", "GET")])
                return SSE_STREAM
            if path == self.messages_path and method == "POST":
                return SSE_MESSAGES
        if self.path is not None and (path.rstrip("/") or "/") != self.path:
            raise _HttpError(INVALID_REQUEST, f"Not found: {path}", status="404 Not Found")
        if method == "POST":
            return POST
        if method == "GET":
            return GET
        if method == "DELETE":
            return DELETE
        raise method_not_allowed()

    def _read_post(self, request: HttpRequest) -> None:
        """A POST's media types, body, messages and scopes."""
        headers = request.headers
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise _HttpError(INVALID_REQUEST,
                             "Unsupported media type: send Content-Type: application/json",
                             status="415 Unsupported Media Type")
        want_json, want_sse = request.accepts
        if not want_json and not want_sse:
            raise _HttpError(INVALID_REQUEST,
                             "Not acceptable: accept application/json and text/event-stream",
                             status="406 Not Acceptable")
        body = self.body.read(request.environ)
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
        refusal = self.gate.scope_refusal(items)
        if refusal is not None:
            raise self.gate.refuse(refusal, getattr(items[0], "id", None))
        request.items = items
        request.batch = batch


__all__ = ["AUTH_ENVIRON_KEY", "LOOPBACK", "AuthGate", "BodyReader", "HostPolicy",
           "HttpRequest", "Intake", "Readiness", "VersionsSpoken", "accepts", "peer_probe",
           "request_headers", "transport_context"]
