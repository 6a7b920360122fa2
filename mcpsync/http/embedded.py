"""mcpsync's WSGI app called from inside another framework's view.

Mounted beside a web app (:func:`mcpsync.http.mount`), the MCP endpoint answers before
the framework sees the request. Called from a view instead (``mcpsync.django``'s
``mcp_endpoint``, ``mcpsync.flask``'s ``MCP``), the framework's middleware, hosts, session
and login run first, and the view hands the request on to :class:`McpWsgiApp` on the
thread the framework serves it on. What that hand-over is does not depend on the
framework, so it is written once here, and each adapter keeps only what is its
framework's own (finding the user, its response classes, its CSRF and compression
quirks):

* **Who may come in** (:meth:`EmbeddedEndpoint.admit`): the framework's user; else, with
  ``auth=``, the user an access token stands for; else anonymous, when allowed.
* **Who is calling** (:func:`bind_user`): the view runs the app inside the call's context
  (:class:`EmbeddedCall`); mcpsync runs the server's receive middleware on that same
  thread before any handler, and this one copies the view's user into the message's
  :class:`~mcpsync.TransportContext`, which travels with the request to its handler
  thread: ``ctx.user`` is the framework's user wherever the handler runs. The framework's
  request is kept for :func:`current_request` while the view's response lasts.
* **Whose session** (:class:`SessionOwners`): a handshake-era session is used by the user
  that created it only; another user's ``Mcp-Session-Id`` is answered exactly as a
  session that does not exist, so nothing tells the two apart.
* **The answer** (:class:`Answer`): mcpsync's status and headers (less the hop-by-hop
  ones, which the framework's server sets) and its body: bytes for JSON, or an iterator
  of SSE events that the framework streams as they are written.
"""

from __future__ import annotations

import contextvars
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..dispatch.inbound import TransportContext, current_transport
from ..protocol.jsonrpc import Message, Request

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext
    from ..server.server import ServerCore
    from .wsgi import McpWsgiApp

#: Response headers that belong to one hop; the framework's handler and server set their own.
HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "transfer-encoding",
                               "proxy-connection", "upgrade", "te", "trailer"})
#: Sessions remembered per endpoint with the user that created them (the oldest is
#: forgotten past it; mcpsync holds at most ``max_sessions`` sessions anyway).
MAX_OWNERS: Final = 100_000
#: What another user's session id is replaced with: no session is ever named so (ids are
#: random hex), so mcpsync answers it as an unknown session.
NOT_A_SESSION: Final = "not-a-session"


def is_authenticated(user: Any) -> bool:
    """Whether ``user`` is someone (Django's and Flask-Login's ``is_authenticated``)."""
    return user is not None and bool(getattr(user, "is_authenticated", False))


def refusal_body(message: str) -> bytes:
    """The JSON-RPC error body of a refusal made before mcpsync's app runs."""
    return json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": message}}).encode()


# -- who is calling ------------------------------------------------------------------------


@dataclass
class EmbeddedCall:
    """One call of the view: the framework's request, the user it acts as, and the
    transport contexts its MCP requests were given (forgotten when the response ends)."""

    request: Any
    user: Any
    transports: list[TransportContext] = field(default_factory=list)


_current: contextvars.ContextVar[EmbeddedCall | None] = contextvars.ContextVar(
    "mcpsync_embedded_call", default=None)
#: The framework requests being answered now, by transport context: an entry is added by
#: :func:`bind_user` and dropped when the view's response ends (:func:`_forget`), so it
#: holds no more than the responses in progress.
_requests: dict[int, tuple[TransportContext, Any]] = {}
_requests_lock = threading.Lock()


def in_call() -> bool:
    """Whether this thread is inside a view's call of mcpsync's app right now (so the
    framework manages this thread's resources, its database connections, as for any
    request)."""
    return _current.get() is not None


def bind_user(message: Message, next_: Callable[[Message], None]) -> None:
    """Receive middleware: a message that arrived through a view acts as the view's user
    (``ctx.user``), and its request is kept for :func:`current_request`. Messages that
    came another way (a mount beside the app, stdio) are passed on as they are."""
    call = _current.get()
    transport = current_transport()
    if call is not None and transport is not None:
        transport.user = call.user
        if isinstance(message, Request):
            with _requests_lock:
                _requests[id(transport)] = (transport, call.request)
            call.transports.append(transport)
    next_(message)


_bound: weakref.WeakSet[ServerCore] = weakref.WeakSet()
_bound_lock = threading.Lock()


def install_bind_user(server: ServerCore) -> None:
    """Put :func:`bind_user` first among ``server``'s receive middleware, once per server
    (whichever adapter or endpoint serves it first)."""
    with _bound_lock:
        if server in _bound:
            return
        _bound.add(server)
    server.recv_middleware.insert(0, bind_user)


def acting_as(user: Any) -> Callable[[Message, Callable[[Message], None]], None]:
    """Receive middleware: every message acts as ``user`` (a stdio server run by a
    framework's command with ``--user``, where there is no request to take a user from)."""
    def middleware(message: Message, next_: Callable[[Message], None]) -> None:
        transport = current_transport()
        if transport is not None:
            transport.user = user
        next_(message)

    return middleware


def current_request(ctx: HandlerContext) -> Any:
    """The framework's request (Django's ``HttpRequest``, Flask's ``Request``) the request
    of ``ctx`` came in, while its response lasts; ``None`` when it came another way
    (stdio, a mount) or has been answered."""
    with _requests_lock:
        found = _requests.get(id(ctx.transport))
    if found is None or found[0] is not ctx.transport:
        return None
    return found[1]


def _forget(call: EmbeddedCall) -> None:
    """The response of ``call`` has ended: its requests are no longer reachable."""
    with _requests_lock:
        for transport in call.transports:
            _requests.pop(id(transport), None)
    call.transports.clear()


# -- whose session -------------------------------------------------------------------------


class SessionOwners:
    """Which user created each handshake-era session seen through one endpoint, so that
    another user presenting its ``Mcp-Session-Id`` is answered as for an unknown session.
    Thread-safe; bounded (``limit``, the oldest forgotten first: its session is then left
    to mcpsync's own checks). ``user_key(user)`` is what identifies a user across requests
    in the framework's terms (``None`` for anonymous)."""

    def __init__(self, user_key: Callable[[Any], Hashable], limit: int = MAX_OWNERS) -> None:
        self._user_key = user_key
        self._limit = limit
        self._owners: OrderedDict[str, Hashable] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._owners)

    def matches(self, session: str, user: Any) -> bool:
        """Whether ``user`` may use ``session`` (one created elsewhere, on another worker,
        or forgotten, is left to mcpsync's own checks)."""
        key = self._user_key(user)
        with self._lock:
            if session not in self._owners:
                return True
            return bool(self._owners[session] == key)

    def remember(self, session: str, user: Any) -> None:
        key = self._user_key(user)
        with self._lock:
            self._owners[session] = key
            while len(self._owners) > self._limit:
                self._owners.popitem(last=False)


# -- the answer ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Refused:
    """A request refused before mcpsync's app runs: the framework answers ``status`` with
    :func:`refusal_body` of ``message`` (and ``WWW-Authenticate: challenge``, if any)."""

    status: int
    message: str
    challenge: str | None = None

    @property
    def body(self) -> bytes:
        return refusal_body(self.message)


@dataclass(frozen=True)
class Answer:
    """mcpsync's answer to a view: ``status`` (``"200 OK"``), the headers to send (the
    hop-by-hop ones left out) and either ``data`` (a JSON answer, whole) or ``stream``
    (an SSE answer: iterate it as it comes and close it when the framework's response is
    closed, which ends mcpsync's stream and forgets the call)."""

    status: str
    headers: list[tuple[str, str]]
    data: bytes = b""
    stream: Iterator[bytes] | None = None

    @property
    def code(self) -> int:
        return int(self.status.partition(" ")[0])

    @property
    def reason(self) -> str:
        return self.status.partition(" ")[2]


class EmbeddedEndpoint:
    """mcpsync's app (``app``) as one framework endpoint calls it, with the state that
    belongs to the endpoint: who may come in (``allow_anonymous``, ``token_user``) and the
    owners of its sessions (``owners``). Thread-safe (a framework calls its views from
    many threads at once)."""

    def __init__(self, app: McpWsgiApp, *, user_key: Callable[[Any], Hashable],
                 allow_anonymous: bool = False,
                 token_user: Callable[[Any], Any] | None = None,
                 max_owners: int = MAX_OWNERS) -> None:
        #: mcpsync's WSGI app that answers the requests (``close()`` it to stop its threads).
        self.app = app
        self.allow_anonymous = allow_anonymous
        self.token_user = token_user
        self.owners = SessionOwners(user_key, max_owners)
        install_bind_user(app.server)

    def admit(self, user: Any, authorization: str | None) -> Any:
        """The user a request acts as, or :class:`Refused`. ``user``: the one the framework
        found (``None``, or not authenticated: nobody). Without one, an access token
        (``Authorization``, with the app's ``auth=`` and ``token_user``) names the user;
        with ``auth=`` a request without a valid token is let in for the app to answer with
        its 401 challenge (the client can get a token); else an anonymous request is
        refused unless allowed (an MCP client cannot log in to a web session)."""
        if is_authenticated(user):
            return user
        auth = self.app.auth
        if auth is not None and self.token_user is not None:
            from ..auth.server.resource import Refusal

            verdict = auth.authenticate(authorization)
            if not isinstance(verdict, Refusal):
                mapped = self.token_user(verdict)
                if is_authenticated(mapped):
                    return mapped
                return Refused(403, "Forbidden: this access token stands for no user of "
                                    "this site")
        if self.allow_anonymous or auth is not None:
            return user
        return Refused(403, "Forbidden: this MCP endpoint serves signed-in users only")

    def call(self, environ: Mapping[str, Any], *, request: Any, user: Any,
             body: Any, script_name: str) -> Answer:
        """Answer the framework's ``request`` as ``user`` with mcpsync's app. ``environ``:
        the request's WSGI environ; ``body``: the request body as a file to read (what the
        framework has already read of it, or its stream); ``script_name``: the path the
        view is routed at (mcpsync sees the request at its own root)."""
        call = EmbeddedCall(request, user)
        environ = dict(environ)
        session = environ.get("HTTP_MCP_SESSION_ID")
        if session and not self.owners.matches(session, user):
            # Another user's session is answered by mcpsync exactly as a session that does
            # not exist (404, its error code, the request's id): no hint that it does.
            environ["HTTP_MCP_SESSION_ID"] = NOT_A_SESSION
        environ["wsgi.input"] = body
        environ["SCRIPT_NAME"] = script_name
        environ["PATH_INFO"] = ""
        captured: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], object]:
            captured[:] = [status, headers]
            return lambda data: None

        token = _current.set(call)
        try:
            result = self.app(environ, start_response)
        except BaseException:
            _forget(call)
            raise
        finally:
            _current.reset(token)
        status, headers = captured
        created = next((v for k, v in headers if k.lower() == "mcp-session-id"), None)
        if created and not session:
            self.owners.remember(created, user)
        kept = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        if any(k.lower() == "content-type" and v.startswith("text/event-stream")
               for k, v in headers):
            return Answer(status, kept, stream=_streamed(result, call))
        try:
            data = b"".join(result)
        finally:
            _close(result)
            _forget(call)
        return Answer(status, kept, data=data)


def _close(body: Iterable[bytes]) -> None:
    close = getattr(body, "close", None)
    if close is not None:
        close()


def _streamed(body: Iterable[bytes], call: EmbeddedCall) -> Iterator[bytes]:
    """The SSE answer, event by event; mcpsync's body closed when the framework closes the
    response (the client left, or the stream ended)."""
    try:
        yield from body
    finally:
        _close(body)
        _forget(call)


__all__ = ["HOP_BY_HOP", "MAX_OWNERS", "NOT_A_SESSION", "Answer", "EmbeddedCall",
           "EmbeddedEndpoint", "Refused", "SessionOwners", "acting_as", "bind_user",
           "current_request", "in_call", "install_bind_user", "is_authenticated",
           "refusal_body"]
