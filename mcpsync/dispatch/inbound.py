"""The one inbound path: how every message a peer sends is taken in and answered.

The engine (stdio, memory, handshake-era HTTP sessions) and the HTTP app's 2026-07-28
requests both go through an :class:`InboundExecutor`, so what a middleware sees and what a
handler's exception becomes on the wire can not differ between transports or eras::

    request scope      the message's TransportContext is bound (current_transport())
      recv middleware  the onion of (message, next_); the innermost step routes it
        handler        on a handler thread (the caller picks it), scope still bound
      exception→wire   the one mapping: MCPError → its error, cancelled → no answer,
                       anything else → -32603 "Internal error" (logged, never sent)
    send middleware    every answer and every message sent on the request's behalf,
                       refusals too (reject: unreadable, duplicate id, a header that
                       contradicts the body, an unknown session: no handler ran)
    telemetry          an OpenTelemetry span and duration around the handler (and around
                       a notification's routing), when an SDK is configured

The executor holds no threads and no locks (threads belong to the engine and the WSGI
server); it is a pair of frozen middleware chains and the rules above.

The :class:`TransportContext` the executor binds lives here too: what the transport knows
about the peer behind one inbound message. Handlers see it as ``ctx.transport`` (and
``ctx.auth``); middleware, which keeps its ``(message, next_)`` signature, calls
:func:`current_transport` while it runs. Made once per inbound message, so that an auth
layer may fill its ``auth`` slot for that message alone: every other field is fixed when it
is made. It is bound to the thread that runs a middleware chain or a handler for the time it
runs (a :mod:`contextvars` variable: each thread has its own), never longer.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import operator
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from ..errors import (
    INTERNAL_ERROR,
    ConnectionClosedError,
    MCPError,
    RequestCancelledError,
)
from ..protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from ..protocol.tool_outcome import handler_escaped
from ..protocol.versions import is_stateless
from ..telemetry.instrumentation import Instrumentation
from ..telemetry.operation import current as _operation  # the handler's or task's, if any

logger = logging.getLogger("mcpsync.engine")

TransportKind = Literal["stdio", "memory", "http"]

#: Set directly (not through :func:`bound`) on the executor's hot path.
_current_transport: contextvars.ContextVar[TransportContext | None] = contextvars.ContextVar(
    "mcpsync_transport", default=None)


class Headers(Mapping[str, str]):
    """Read-only HTTP request headers; names are case-insensitive. Empty off HTTP."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = {key.lower(): value for key, value in (items or {}).items()}

    @classmethod
    def lowered(cls, items: Mapping[str, str]) -> Headers:
        """Headers whose names are already lower-case (the HTTP app's, per request), kept
        as they are: neither lower-cased again nor copied. The caller hands the dict over
        and changes it no more (the intake makes one per request and never writes to it
        after)."""
        headers = cls.__new__(cls)
        headers._items = items if type(items) is dict else dict(items)
        return headers

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


NO_HEADERS: Final = Headers()


def _fixed(name: str) -> property:
    """A read-only field of :class:`TransportContext`: read from its private slot (by a C
    getter: one is read on every request), refused with a message that says what may be
    set."""

    def refuse(_self: object, _value: object) -> None:
        raise AttributeError(
            f"TransportContext.{name} is read-only (only auth and user may be set)")

    return property(operator.attrgetter("_" + name), refuse)


def _settable(name: str) -> property:
    """A field of :class:`TransportContext` that may be set but not deleted: read from its
    private slot by a C getter; a property with no deleter refuses ``del``."""
    private = "_" + name

    def set_(self: object, value: object) -> None:
        setattr(self, private, value)

    return property(operator.attrgetter(private), set_)


class TransportContext:
    """The transport side of one inbound message. Thread-safe to read.

    ``kind``: ``"stdio"``, ``"memory"`` or ``"http"``. ``headers``: the HTTP request's
    headers (case-insensitive, read-only; empty off HTTP). ``remote_addr``: the client's
    address on HTTP (``REMOTE_ADDR``), else ``None``. ``session_id``: the handshake-era
    session (``Mcp-Session-Id`` on HTTP; ``None`` on stdio, on memory and in 2026-07-28).
    ``can_receive_requests``: whether the peer can be sent requests (elicitation, sampling,
    roots) on a live channel: true in the handshake era, false in 2026-07-28 (where a
    handler asks through ``InputRequiredResult`` instead). ``auth``: the authenticated
    principal, ``None`` until an auth layer (a receive middleware, say) sets it. ``user``:
    the web framework's user for this request (Django's ``request.user``, Flask-Login's
    ``current_user``), ``None`` until a framework adapter sets it; string permissions are
    checked against it (``user.has_perm(codename)``). ``auth`` and ``user`` are the only
    fields that can change, and only before the handler runs is it meaningful to.
    """

    # Every field lives in a plain slot, the public ones behind properties (read-only for
    # the fixed fields; ``auth`` and ``user`` settable, none deletable): one context is
    # made per HTTP request (two for a session's message), and its constructor is plain
    # slot stores. No __setattr__ or __delattr__ of its own: defining either makes every
    # store in the class a Python-level call, which had tripled the constructor's cost.
    __slots__ = ("_auth", "_can_receive_requests", "_headers", "_kind", "_remote_addr",
                 "_session_id", "_user", "ambient", "refusal")

    ambient: Any
    refusal: Exception | None

    def __init__(self, kind: TransportKind, *, headers: Mapping[str, str] | None = None,
                 remote_addr: str | None = None, session_id: str | None = None,
                 can_receive_requests: bool = True, auth: Any = None,
                 user: Any = None) -> None:
        self._kind = kind
        self._headers = headers if isinstance(headers, Headers) else Headers(headers)
        self._remote_addr = remote_addr
        self._session_id = session_id
        self._can_receive_requests = can_receive_requests
        self._auth = auth
        self._user = user
        #: The OpenTelemetry context of the thread the message arrived on (an HTTP server
        #: span, say), kept for the handler's thread when telemetry is recording; else None.
        self.ambient = None
        #: A refusal the transport found but must not answer before the handler knows the
        #: caller: a 2026-07-28 ``Mcp-Param-*`` header mismatch of a tool the caller may
        #: not be allowed to see. The tool lookup raises it once the tool is visible to
        #: the caller, so a hidden tool is answered exactly like an unknown one. Else None.
        self.refusal = None

    if TYPE_CHECKING:  # what the fields read as; at run time, properties (see _fixed)
        kind: TransportKind
        headers: Headers
        remote_addr: str | None
        session_id: str | None
        can_receive_requests: bool
        auth: Any
        user: Any
    else:
        kind = _fixed("kind")
        headers = _fixed("headers")
        remote_addr = _fixed("remote_addr")
        session_id = _fixed("session_id")
        can_receive_requests = _fixed("can_receive_requests")
        auth = _settable("auth")
        user = _settable("user")

    def for_message(self, message: object) -> TransportContext:
        """A fresh context for one inbound message (its own ``auth`` and ``user`` slots,
        starting from this one's). A request or notification carrying the 2026-07-28 envelope is
        stateless: no session, no requests to the peer."""
        stateless = is_stateless(getattr(message, "params", None))
        return TransportContext(
            self.kind, headers=self.headers, remote_addr=self.remote_addr,
            session_id=None if stateless else self.session_id,
            can_receive_requests=False if stateless else self.can_receive_requests,
            auth=self.auth, user=self.user)

    def for_session(self, session_id: str) -> TransportContext:
        """This context for a handshake-era session's messages: named by ``session_id``,
        and its peer can be sent requests."""
        return TransportContext(
            self.kind, headers=self.headers, remote_addr=self.remote_addr,
            session_id=session_id, can_receive_requests=True, auth=self.auth,
            user=self.user)

    def __repr__(self) -> str:
        return (f"TransportContext({self.kind!r}, remote_addr={self.remote_addr!r}, "
                f"session_id={self.session_id!r}, "
                f"can_receive_requests={self.can_receive_requests!r}, auth={self.auth!r}, "
                f"user={self.user!r})")


def current_transport() -> TransportContext | None:
    """The transport context of the message being handled on this thread: inside receive
    and send middleware, and inside a handler (where it is ``ctx.transport``). ``None``
    elsewhere (a thread of your own, a client's connection)."""
    return _current_transport.get()


@contextlib.contextmanager
def bound(transport: TransportContext | None) -> Iterator[None]:
    """Make ``transport`` this thread's :func:`current_transport` while inside (``None``
    leaves the current one in place)."""
    if transport is None:
        yield
        return
    token = _current_transport.set(transport)
    try:
        yield
    finally:
        _current_transport.reset(token)


#: A middleware: receives a message and the rest of the chain. Call ``next_(message)`` to
#: pass it on (possibly a changed message); return without calling it to drop the message.
Middleware = Callable[[Message, Callable[[Message], None]], None]
Step = Callable[[Message], None]


class RequestFacts(Protocol):
    """What a request is: its id, method and raw params."""

    @property
    def id(self) -> RequestId: ...

    @property
    def method(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...


class Inbound(RequestFacts, Protocol):
    """What the executor needs of an inbound request (the engine's ``InboundRequest``)."""

    @property
    def transport(self) -> TransportContext | None: ...

    @property
    def cancelled(self) -> threading.Event: ...


def compose(chain: Sequence[Middleware], terminal: Step) -> Step:
    """Build the onion: ``chain[0]`` is outermost, ``terminal`` the innermost step."""
    handler = terminal
    for middleware in reversed(chain):
        handler = _bind(middleware, handler)
    return handler


def _bind(middleware: Middleware, next_: Step) -> Step:
    def step(message: Message) -> None:
        middleware(message, next_)

    return step


_In = TypeVar("_In", bound=Inbound)


def error_answer(request_id: RequestId, exc: BaseException, *, cancelled: bool,
                 method: str, name: str = "mcpsync") -> Message | None:
    """The wire form of ``exc`` raised while serving ``request_id``: the one mapping.

    ``None`` (no answer) for a request that was cancelled, as the spec requires; but a
    handler that merely let a cancelled child call's error escape still owes its caller an
    answer. An unexpected exception is logged here and answered with a bare -32603: its
    text may hold secrets and never goes on the wire.
    """
    if isinstance(exc, RequestCancelledError):
        return None if cancelled else ErrorResponse(
            request_id, {"code": INTERNAL_ERROR, "message": f"Internal error: {exc}"})
    if isinstance(exc, MCPError):
        return ErrorResponse(request_id, exc.to_wire())
    logger.error("%s: handler for %s failed", name, method, exc_info=exc)
    return ErrorResponse(request_id, {"code": INTERNAL_ERROR, "message": "Internal error"})


#: Notification method -> the span event it becomes, and the params it keeps (never the
#: log's data or the progress message: they may hold what the handler was given).
_EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "notifications/progress": ("mcp.progress", ("progress", "total")),
    "notifications/message": ("mcp.log", ("level", "logger")),
}


def note_sent(method: str, params: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a handler's context calls for each notification it sends: with telemetry
    recording the request this thread serves, a progress or log notification becomes an
    event of its span (bounded), and a log message carries the span's ``traceparent`` in
    its ``_meta`` (so the client can tie the record to the trace). Returns the params to
    send (``params`` itself when nothing is recorded)."""
    operation = _operation.get()
    if operation is None:
        return params
    kind = _EVENTS.get(method)
    if kind is None:
        return params
    name, keys = kind
    values = params or {}
    operation.event(name, {key: values[key] for key in keys
                           if isinstance(values.get(key), (str, int, float))})
    traceparent = operation.traceparent() if method == "notifications/message" else None
    if traceparent is None:
        return params
    sent = dict(values)
    meta = sent.get("_meta")
    sent["_meta"] = {**(meta if isinstance(meta, dict) else {}), "traceparent": traceparent}
    return sent


class InboundExecutor:
    """Receive middleware, handler call, exception→wire and send middleware of one server
    or client connection (or one HTTP request). Thread-safe: it holds no mutable state."""

    __slots__ = ("_name", "_recv", "_send", "_telemetry", "protocol_version")

    def __init__(self, recv_middleware: Sequence[Middleware] = (),
                 send_middleware: Sequence[Middleware] = (), *, name: str = "mcpsync",
                 telemetry: Instrumentation | None = None) -> None:
        self._recv = tuple(recv_middleware)
        self._send = tuple(send_middleware)
        self._name = name
        self._telemetry = telemetry if telemetry is not None and \
            telemetry.config.enabled else None
        #: The revision negotiated on this connection (handshake era), for telemetry; a
        #: 2026-07-28 message names its own in ``_meta``. Set by the connection's owner.
        self.protocol_version: str | None = None

    def receive(self, message: Message, transport: TransportContext | None, route: Step,
                reply: Step) -> None:
        """Run ``message`` through the receive middleware, ``transport`` bound; ``route``
        is the innermost step. A middleware may drop the message (not call ``next_``) or
        refuse a request by raising: an :class:`~mcpsync.errors.MCPError` becomes that
        request's error answer (anything else a -32603), handed to ``reply`` (which sends
        it through the send middleware). Raised after the request was routed, or for a
        notification, it is only logged. ``ConnectionClosedError`` always propagates."""
        telemetry = self._telemetry
        if telemetry is not None and telemetry.active:
            self._receive_recorded(telemetry, message, transport, route, reply)
            return
        self._receive(message, transport, route, reply)

    def _receive_recorded(self, telemetry: Instrumentation, message: Message,
                          transport: TransportContext | None, route: Step,
                          reply: Step) -> None:
        """:meth:`receive` with telemetry: a request keeps this thread's context (an HTTP
        server span, say) for the handler's thread, where its span's parent or link is
        chosen; a notification is recorded here, where it is routed."""
        if not isinstance(message, Notification):
            if transport is not None and isinstance(message, Request):
                transport.ambient = telemetry.current_context()
            self._receive(message, transport, route, reply)
            return
        operation = telemetry.inbound(message.method, message.params, None,
                                      transport=transport,
                                      protocol_version=self.protocol_version)
        try:
            self._receive(message, transport, route, reply)
        except BaseException as exc:
            if operation is not None:
                operation.raised(exc)
            raise
        if operation is not None:
            operation.succeeded()

    def _receive(self, message: Message, transport: TransportContext | None, route: Step,
                 reply: Step) -> None:
        if not self._recv:
            # No middleware (the common case): the same, without the onion's closures.
            token = _current_transport.set(transport) if transport is not None else None
            try:
                route(message)
            except ConnectionClosedError:
                raise
            except Exception:
                logger.exception("%s: failed to route %r", self._name, message)
            finally:
                if token is not None:
                    _current_transport.reset(token)
            return
        routed = False

        def terminal(final: Message) -> None:
            nonlocal routed
            routed = True
            route(final)

        with bound(transport):
            try:
                compose(self._recv, terminal)(message)
            except ConnectionClosedError:
                raise
            except Exception as exc:
                if routed or not isinstance(message, Request):
                    logger.exception("%s: failed to route %r", self._name, message)
                    return
                answer = error_answer(message.id, exc, cancelled=False, method=message.method,
                                      name=self._name)
                if isinstance(exc, MCPError):
                    logger.info("%s: %s refused by receive middleware: %s", self._name,
                                message.method, exc)
                assert answer is not None
                reply(answer)

    def answer(self, inbound: Inbound, call: Callable[[], dict[str, Any]]) -> Message | None:
        """Run the handler (``call``) with the request's transport bound; its result as a
        response, its exception through :func:`error_answer` (``None``: answer nothing)."""
        telemetry = self._telemetry
        if telemetry is not None and telemetry.active:
            return self._answer_recorded(telemetry, inbound, call)
        transport = inbound.transport
        token = _current_transport.set(transport) if transport is not None else None
        try:
            return Response(inbound.id, call())
        except Exception as exc:
            return error_answer(inbound.id, exc, cancelled=inbound.cancelled.is_set(),
                                method=inbound.method, name=self._name)
        finally:
            if token is not None:
                _current_transport.reset(token)

    def settle(self, inbound: _In, call: Callable[[], dict[str, Any]],
               deliver: Callable[[_In, Message | None], None]) -> None:
        """:meth:`answer`, then ``deliver(inbound, answer)``, whatever the handler raised.

        An exception that is not an :class:`Exception` (``sys.exit()``'s SystemExit,
        Ctrl-C's KeyboardInterrupt on a request served on the main thread, a test runner's
        timeout) passes :meth:`answer` by. Its request is answered all the same, with
        -32603 and the generic text of :func:`~mcpsync.protocol.tool_outcome.handler_escaped`:
        a request left without its answer holds its caller, its response and its slot for
        good. Then, on the main thread, the exception goes on to the caller: it came by a
        signal or ends the program, and a one-thread server stops as it would had it run
        the handler itself. On any other thread (a pool's, a request's, a reader's) it
        ends nothing but the handler: logged here, once, and the thread serves on."""
        try:
            out = self.answer(inbound, call)
        except BaseException as exc:
            deliver(inbound, ErrorResponse(
                inbound.id, handler_escaped(inbound.method, inbound.id).to_wire()))
            if threading.current_thread() is threading.main_thread():
                raise
            logger.error("%s: handler for %s ended by %s (request %r); answered -32603",
                         self._name, inbound.method, type(exc).__name__, inbound.id,
                         exc_info=exc)
            return
        deliver(inbound, out)

    def _answer_recorded(self, telemetry: Instrumentation, inbound: Inbound,
                         call: Callable[[], dict[str, Any]]) -> Message | None:
        """:meth:`answer` inside an operation: the span is this thread's current one
        while the handler runs, and ends with the answer that goes on the wire."""
        transport = inbound.transport
        operation = telemetry.inbound(
            inbound.method, inbound.params, inbound.id, transport=transport,
            protocol_version=self.protocol_version,
            ambient=transport.ambient if transport is not None else None)
        token = _current_transport.set(transport) if transport is not None else None
        recording = _operation.set(operation)
        try:
            result = call()
        except Exception as exc:
            answer = error_answer(inbound.id, exc, cancelled=inbound.cancelled.is_set(),
                                  method=inbound.method, name=self._name)
            if operation is not None:
                if isinstance(answer, ErrorResponse) and not isinstance(exc, MCPError):
                    operation.raised(exc)
                elif isinstance(answer, ErrorResponse):
                    operation.failed(answer.error.get("code", INTERNAL_ERROR),
                                     answer.error.get("message", ""))
                else:  # cancelled: no answer
                    operation.raised(exc)
            return answer
        except BaseException as exc:  # not an Exception: answered and raised on by settle
            if operation is not None:
                operation.raised(exc)
            raise
        else:
            if operation is not None:
                operation.succeeded(result)
            return Response(inbound.id, result)
        finally:
            _operation.reset(recording)
            if token is not None:
                _current_transport.reset(token)

    def send(self, message: Message, transport: TransportContext | None, write: Step) -> None:
        """Run ``message`` through the send middleware, ``transport`` bound (``None``: the
        thread's current one stays); ``write`` is the innermost step."""
        if not self._send:
            write(message)
            return
        with bound(transport):
            compose(self._send, write)(message)

    def reject(self, request_id: RequestId | None, error: MCPError | Mapping[str, Any],
               transport: TransportContext | None, write: Step) -> None:
        """Refuse a message that no handler will see (unreadable, a duplicate id, a header
        that contradicts the body, an unknown session...) with ``error``: its answer for
        ``request_id`` (``None`` when the id could not be read) goes through the send
        middleware, as every answer does, then to ``write``. The one path refusals take,
        so that a middleware that rewrites, records or signs answers sees these too."""
        wire = error.to_wire() if isinstance(error, MCPError) else dict(error)
        logger.debug("%s: refused (id %r): %s", self._name, request_id, wire.get("message"))
        self.send(ErrorResponse(request_id, wire), transport, write)

    @property
    def has_send_middleware(self) -> bool:
        return bool(self._send)

    @property
    def receives_as_is(self) -> bool:
        """Whether :meth:`receive` would hand a message to its ``route`` unchanged and
        record nothing (no receive middleware, no telemetry recording now): a caller that
        routes one request may then take it as it came, without a receive step."""
        telemetry = self._telemetry
        return not self._recv and (telemetry is None or not telemetry.active)

    @property
    def has_receive_middleware(self) -> bool:
        return bool(self._recv)


class RequestExecutors:
    """The inbound executor of each request of an HTTP app (call the object), over the
    server's middleware lists as they are at that moment: ``add_middleware`` and direct
    appends take effect from the next request. While both lists are empty (most servers,
    for good) every request shares one executor, which holds nothing a request changes;
    otherwise each gets its own, over copies of the lists. Thread-safe."""

    __slots__ = ("_bare", "_make", "_recv", "_send")

    def __init__(self, recv_middleware: list[Middleware], send_middleware: list[Middleware],
                 *, name: str, telemetry: Instrumentation | None) -> None:
        self._recv = recv_middleware
        self._send = send_middleware
        self._make = functools.partial(InboundExecutor, recv_middleware, send_middleware,
                                       name=name, telemetry=telemetry)
        self._bare = InboundExecutor((), (), name=name, telemetry=telemetry)

    def __call__(self) -> InboundExecutor:
        if self._recv or self._send:
            return self._make()
        return self._bare
