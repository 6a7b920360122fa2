"""HandlerContext: what a handler may know and do about the request it is serving.

There is one context type. What a context does (``progress``, ``log``, ``request``,
``sleep``, ``check_cancelled``, ``elicit``…) is written once, here, over two ports
(``ports.py``): where its messages go, and how long it lives. A request's context is built
on the request's pair (also ``ports.py``): it ends when the response is written, and
from then on anything that would be sent on the request's behalf raises
:class:`~mcpsync.errors.ContextClosedError`, because the peer has stopped listening for it.
Work that must outlive the request takes :meth:`HandlerContext.detach`: a
:class:`DetachedContext` is the same type on the session's pair. A task's context
(``mcpsync.tasks.TaskContext``) is the same type again, on the task store's pair.

A context is meant for the handler's thread and any threads it starts; its methods are
thread-safe.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidParamsError
from ..protocol import levels
from ..protocol.jsonrpc import RequestId
from .inbound import TransportContext, note_sent
from .ports import (
    Lifetime,
    Outlet,
    RequestFacts,
    RequestLifetime,
    RequestOutlet,
    ServedRequest,
    SessionHandle,
    SessionInfo,
    SessionLifetime,
    SessionOutlet,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..types.client_features import CreateMessageResult, ElicitResult
    from ..types.resources import ReadResourceResult, Root

__all__ = ["DetachedContext", "HandlerContext", "SessionHandle", "check_meta",
           "progress_token_of", "server_of"]


def check_meta(params: dict[str, Any]) -> None:
    """Refuse a request whose ``_meta`` the spec's types do not allow, with ``-32602``:
    ``_meta`` must be an object, and its ``progressToken`` a string or an integer. A token
    is echoed in every progress notification, so one that could not be sent back (a lone
    surrogate) is refused here rather than failing the handler at its first progress."""
    meta = params.get("_meta")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise InvalidParamsError('Invalid params: "_meta" must be an object')
    token = meta.get("progressToken")
    if token is None:
        return
    if isinstance(token, bool) or not isinstance(token, (str, int)):
        raise InvalidParamsError(
            'Invalid params: "_meta.progressToken" must be a string or an integer')
    if isinstance(token, str):
        try:
            token.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParamsError('Invalid params: "_meta.progressToken" is not valid '
                                     "Unicode (a lone surrogate)") from None


def _log_params(
    session: SessionHandle, level: str, data: Any, logger: str | None
) -> dict[str, Any] | None:
    """The params of a ``notifications/message``, or ``None`` when the level filters it out."""
    if not levels.is_level(level):
        raise ValueError(f"unknown log level {level!r}; use one of {levels.LEVELS}")
    if not session.log_enabled(level):
        return None
    params: dict[str, Any] = {"level": level, "data": data}
    if logger is not None:
        params["logger"] = logger
    return params


class ResourceReader(Protocol):
    """A server's resources, as ``ctx.read_resource`` reads them (its ``ResourceRegistry``)."""

    def read_uri(self, uri: str, ctx: HandlerContext) -> dict[str, Any]: ...


class ContextServer(Protocol):
    """What a context reads of the :class:`~mcpsync.Server` serving it (``ctx.state``,
    ``ctx.read_resource``). The server package imports this module, so the server is named
    here by what is read of it; ``ctx.server`` itself stays the whole, untyped Server."""

    @property
    def resources(self) -> ResourceReader: ...

    @property
    def state(self) -> Any: ...


def server_of(session: SessionHandle) -> ContextServer:
    """The :class:`~mcpsync.Server` serving ``session`` (a ServerSession, a stateless
    request's scope and a remote task's session all have one)."""
    server: ContextServer | None = getattr(session, "server", None)
    if server is None:
        raise RuntimeError("this context is not served by an mcpsync Server")
    return server


def progress_token_of(meta: dict[str, Any]) -> str | int | None:
    """The request's ``_meta.progressToken`` if it is one a progress notification can
    carry (a string or an integer, not a bool), else ``None``."""
    token = meta.get("progressToken")
    if isinstance(token, bool) or not isinstance(token, (str, int)):
        return None
    return token


class HandlerContext:
    """The request being served, and the ways to talk back to its sender.

    Declare a parameter annotated ``HandlerContext`` on a tool (any name) to receive it; it
    is left out of the tool's input schema. A handler that runs detached or as a task gets
    the same type (:class:`DetachedContext`, ``mcpsync.TaskContext``), built on other
    ports: the methods below say what they do for a request's own context.
    """

    def __init__(self, inbound: ServedRequest, session: SessionHandle) -> None:
        # A request's own context: its ports are made on first use (most tools never send
        # anything, and this runs for every request); other kinds go through _setup.
        self._about: RequestFacts = inbound
        self._inbound = inbound
        self._session = session
        given = inbound.transport
        #: What the transport knows of the peer: its kind, HTTP headers, remote address,
        #: session id, whether it can be sent requests, and the ``auth`` slot.
        self.transport: TransportContext = given if isinstance(given, TransportContext) else (
            TransportContext("memory"))
        meta = inbound.params.get("_meta")
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}

    @functools.cached_property
    def _outlet(self) -> Outlet:
        """A request context's outlet (:meth:`_setup` sets it for every other kind)."""
        return RequestOutlet(self._inbound, self._session)

    @functools.cached_property
    def _lifetime(self) -> Lifetime:
        """A request context's lifetime (:meth:`_setup` sets it for every other kind)."""
        return RequestLifetime(self._inbound)

    def _shared_state(self) -> dict[str, Any]:
        """This context's attributes, its ports made, for a context that shares them
        (``MountedContext``): both then send through, and are cancelled by, the same."""
        _ = (self._outlet, self._lifetime)  # made now (kept in __dict__): one pair for both
        return self.__dict__

    def _setup(self, about: RequestFacts, session: SessionHandle, outlet: Outlet,
               lifetime: Lifetime, transport: TransportContext, meta: Any) -> None:
        """Bind the context to the request it serves, its session and its two ports. Every
        kind of context but a request's own (whose ports are made on first use) is built
        through here: a kind is a port pair, not a re-implementation (``MountedContext``
        copies these attributes, so they live in ``__dict__``)."""
        self._about = about
        self._session = session
        self._outlet = outlet
        self._lifetime = lifetime
        self.transport = transport
        self.meta = meta if isinstance(meta, dict) else {}

    # -- what the request is -----------------------------------------------------------

    @property
    def request_id(self) -> RequestId:
        return self._about.id

    @property
    def method(self) -> str:
        return self._about.method

    @property
    def params(self) -> dict[str, Any]:
        """The raw request params, as received."""
        return self._about.params

    @property
    def session(self) -> SessionInfo:
        """The peer's negotiated version, capabilities and identity."""
        return self._session.info

    @property
    def auth(self) -> Any:
        """The authenticated principal an auth layer stored in ``ctx.transport.auth``
        (``None`` when none did)."""
        return self.transport.auth

    @property
    def user(self) -> Any:
        """The web framework's user making this request (Django's ``request.user``,
        Flask-Login's ``current_user``), as the framework adapter stored it in
        ``ctx.transport.user``; ``None`` when no adapter set one. A string ``permission=``
        on a component is checked as ``ctx.user.has_perm(codename)``."""
        return self.transport.user

    @property
    def cancelled(self) -> threading.Event:
        """Set when the caller cancels, the session ends, or the server stops."""
        return self._lifetime.cancelled

    @property
    def progress_token(self) -> str | int | None:
        return progress_token_of(self.meta)

    @property
    def closed(self) -> bool:
        """True once the response has been sent (or the request abandoned)."""
        return self._lifetime.closed

    @property
    def server(self) -> Any:
        """The :class:`~mcpsync.Server` serving this request."""
        return server_of(self._session)

    @property
    def state(self) -> Any:
        """What the server's ``lifespan`` yielded (or the namespace its ``on_startup``
        hooks filled): ``server.state``, shared by every request of this process. In a
        mounted server's handler, the mounted server's (see ``Server.mount``)."""
        server: ContextServer = self.server
        return server.state

    # -- cooperative cancellation ----------------------------------------------------------

    def check_cancelled(self) -> None:
        """Raise :class:`~mcpsync.errors.RequestCancelledError` if the request was cancelled.

        Let it propagate: mcpsync then sends no response, as the spec requires.
        """
        self._lifetime.check_cancelled()

    def sleep(self, seconds: float) -> None:
        """Sleep like :func:`time.sleep`, but wake and raise at once when cancelled."""
        self._lifetime.sleep(seconds)

    # -- talking back --------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification on this request's channel."""
        self._outlet.notify(method, note_sent(method, params))

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress. A no-op when the caller sent no ``progressToken``.

        The spec requires each value to exceed the last: a value that does not is dropped
        (with a warning in the log) rather than sent.
        """
        token = self.progress_token
        if token is not None:
            note_sent("notifications/progress", {"progress": progress, "total": total})
        self._outlet.progress(token, progress, total, message)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client if the session's level lets it through."""
        params = _log_params(self._session, level, data, logger)
        if params is not None:
            self.notify("notifications/message", params)

    def debug(self, data: Any, logger: str | None = None) -> None:
        """``log("debug", data, logger)``."""
        self.log("debug", data, logger)

    def info(self, data: Any, logger: str | None = None) -> None:
        """``log("info", data, logger)``."""
        self.log("info", data, logger)

    def notice(self, data: Any, logger: str | None = None) -> None:
        """``log("notice", data, logger)``."""
        self.log("notice", data, logger)

    def warning(self, data: Any, logger: str | None = None) -> None:
        """``log("warning", data, logger)``."""
        self.log("warning", data, logger)

    def error(self, data: Any, logger: str | None = None) -> None:
        """``log("error", data, logger)``."""
        self.log("error", data, logger)

    def critical(self, data: Any, logger: str | None = None) -> None:
        """``log("critical", data, logger)``."""
        self.log("critical", data, logger)

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request to the client on behalf of this one, and block for its result.

        Cancelling this request cancels the reverse call too. An error answer from the
        client raises :class:`~mcpsync.errors.PeerRequestError` (an ``MCPError`` of code
        -32603 that keeps the client's error), never the client's error itself: let
        through, it must not answer this request with the client's code.
        """
        return self._outlet.request(method, params, timeout=timeout)

    @contextlib.contextmanager
    def forward_logging(
        self, logger: str | None = None, level: int = logging.DEBUG
    ) -> Iterator[None]:
        """Send what Python ``logging`` records on this thread to the client, while inside.

        ``with ctx.forward_logging("myapp"): ...`` turns each record of the ``myapp`` logger
        (or the root logger) emitted by this handler's thread into a
        ``notifications/message`` at the matching level, honouring the session's level.
        """
        handler = _ForwardHandler(self, threading.get_ident(), level)
        target = logging.getLogger(logger)
        target.addHandler(handler)
        try:
            yield
        finally:
            target.removeHandler(handler)

    def read_resource(self, uri: str) -> ReadResourceResult:
        """Read one of this server's own resources (those registered with
        ``@server.resource``), in this thread, as a client would get it: a
        ``ReadResourceResult``. A URI that names nothing raises
        :class:`~mcpsync.errors.ResourceNotFoundError`; what the read function raises
        propagates. A ``resources/read`` replaced with ``method_handler`` is not consulted,
        and request scopes are not entered again (this request's are already open)."""
        from ..codec import from_wire
        from ..types.resources import ReadResourceResult

        server: ContextServer = self.server
        raw = server.resources.read_uri(uri, self)
        return from_wire(ReadResourceResult, raw)

    # -- asking the client (handshake era: real requests; each blocks on a Future) ------

    def elicit(
        self, message: str, schema: dict[str, Any] | type, *, timeout: float | None = None
    ) -> ElicitResult:
        """Ask the user to fill a form; blocks until they answer.

        ``schema`` is a flat JSON Schema dict or a dataclass of primitive fields. The result
        has ``.action`` (``accept``/``decline``/``cancel``), ``.content`` (with the schema's
        defaults filled in) and, for a dataclass, ``.data`` (an instance of it).
        """
        from .reverse import ReverseCalls

        return ReverseCalls(self.session, self._outlet).elicit(message, schema, timeout=timeout)

    def ask_all(self, *questions: Callable[[], Any]) -> list[Any]:
        """Ask several questions at once; their answers, in order.

        Each question is a callable that asks one, e.g. ``lambda: ctx.elicit("Name?",
        Contact)``, ``lambda: ctx.sample("Summarize", max_tokens=50)``, ``ctx.list_roots``.
        Under 2026-07-28 every unanswered one goes into the same ``InputRequiredResult``,
        so the client answers them in one round instead of one round each. In the
        handshake era they are asked one after another, as real requests.
        """
        return self._outlet.ask_all(questions)

    def elicit_url(
        self, message: str, url: str, *, elicitation_id: str | None = None,
        timeout: float | None = None,
    ) -> ElicitResult:
        """Ask the user to open ``url`` (URL-mode elicitation, 2025-11-25)."""
        from .reverse import ReverseCalls

        return ReverseCalls(self.session, self._outlet).elicit_url(
            message, url, elicitation_id=elicitation_id, timeout=timeout)

    def elicitation_complete(self, elicitation_id: str) -> None:
        """Tell the client a URL-mode elicitation finished out of band (2025-11-25)."""
        self._session.connection.notify(
            "notifications/elicitation/complete", {"elicitationId": elicitation_id})

    def sample(self, messages: str | Sequence[Any], *, max_tokens: int,
               **options: Any) -> CreateMessageResult:
        """Ask the client's model for a message (``sampling/createMessage``).

        ``messages`` is a string (one user message) or a list of strings, ``{"role",
        "content"}`` dicts or ``SamplingMessage``; options: ``system_prompt``,
        ``temperature``, ``stop_sequences``, ``model_preferences``, ``include_context``,
        ``metadata``, ``tools``, ``tool_choice`` (tools need the client's
        ``sampling.tools``), ``timeout``.
        """
        from .reverse import ReverseCalls

        return ReverseCalls(self.session, self._outlet).sample(
            messages, max_tokens=max_tokens, **options)

    def list_roots(self, *, timeout: float | None = None) -> list[Root]:
        """The filesystem roots the client exposes."""
        from .reverse import ReverseCalls

        return ReverseCalls(self.session, self._outlet).list_roots(timeout=timeout)

    def close_sse_stream(self) -> bool:
        """Drop the client's connection to this request's SSE stream, leaving the request
        running: a handshake-era HTTP client reconnects with ``Last-Event-ID`` after the
        server's ``retry:`` delay and receives the rest (SEP-1699 polling), so a load
        balancer may move long calls between connections. ``False`` (and nothing happens)
        where that does not apply: stdio, 2026-07-28, or no event store."""
        return self._outlet.close_stream()

    def detach(self) -> DetachedContext:
        """A context for a background thread that outlives this request.

        Its notifications and logs go to the session's own channel (the stdio stream, the
        HTTP GET stream) instead of this request's; its ``cancelled`` is set when the
        session ends.
        """
        return DetachedContext(self)


class _ForwardHandler(logging.Handler):
    """A logging handler bound to one thread and one context."""

    def __init__(self, ctx: HandlerContext, thread_id: int, level: int) -> None:
        super().__init__(level)
        self._ctx = ctx
        self._thread_id = thread_id

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self._thread_id or record.name.startswith("mcpsync"):
            return
        level = levels.FROM_PYTHON.get(record.levelno - record.levelno % 10, "debug")
        if record.levelno >= logging.CRITICAL:
            level = "critical"
        # A record is text for people: lone surrogates (an undecodable file name, say) are
        # spelled out rather than making the message unencodable.
        text = self.format(record).encode("utf-8", "backslashreplace").decode("utf-8")
        try:
            self._ctx.log(level, text, logger=record.name)
        except Exception:
            self.handleError(record)


class DetachedContext(HandlerContext):
    """A context cut loose from its request: lives as long as the session. Thread-safe.

    The same context on the session's ports: ``cancelled`` is the session's ``ended``
    event, ``check_cancelled`` and ``sleep`` raise when the session ends, ``notify``,
    ``log`` and ``request`` use the session's own channel (tied to no request), and
    ``progress`` reports on the original request while it is still running, and is
    dropped afterwards (the spec forbids progress after the response). A task's context
    (``mcpsync.TaskContext``) is a detached context too, on the task store's ports.
    """

    def __init__(self, origin: HandlerContext) -> None:
        session = origin._session
        self._setup(origin._about, session,
                    SessionOutlet(session, origin._outlet, origin._lifetime),
                    SessionLifetime(session.ended), origin.transport, origin.meta)
        self._origin = origin

    @property
    def server(self) -> Any:
        """The server of the request it was cut from (a mounted one's, in its handler)."""
        return self._origin.server

    def detach(self) -> DetachedContext:
        """The context itself: it already outlives the request it was cut from (so a
        handler written for plain calls that detaches still works when it runs detached,
        as a task)."""
        return self
