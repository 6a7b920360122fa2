"""The mounted side of ``Server.mount``: how names and URIs cross a mount, and how one
request is handed to a mounted server.

The naming rules (:mod:`mcpsync.protocol.prefixes`, shared with ``Client.from_config``),
both ways (``prefix`` None or empty: everything unchanged):

* tools and prompts: ``name`` ↔ ``{prefix}_{name}``;
* resource URIs and URI templates: ``scheme://rest`` ↔ ``scheme://{prefix}/rest`` (the
  prefix becomes the first path segment after the first ``://``, so ``file:///x`` is
  ``file://{prefix}//x``); a URI with no ``://`` (``urn:…``, ``mailto:…``) is left as
  it is, and reading it asks the mounts in order.

A request handed to a mounted server runs as if that server had received it: through its
receive middleware (a ``Request`` with the un-prefixed params), its request scopes and
per-item OAuth scopes (its dispatcher's ``run_handler``), its handler, and its send middleware
(the answer, before the parent re-prefixes it). The handler's context is the parent's,
except that ``ctx.server``/``ctx.state``/``ctx.read_resource`` are the mounted server's.
The client's capabilities cross unchanged, extensions included: the mounted server's own
extensions (``Server.use``: the tasks extension of every ``mcpsync.Server``) serve the
client as they would serve it directly (a ``task="required"`` tool runs as a task of the
mounted server, which the parent routes ``tasks/*`` to). Notifications the handler sends
go out through the parent's send middleware.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..dispatch.context import HandlerContext
from ..dispatch.inbound import compose
from ..dispatch.registry import MethodRegistry
from ..engine.connection import Middleware
from ..errors import InternalError, MCPError, MethodNotFoundError
from ..protocol.jsonrpc import ErrorResponse, Message, Request, Response
from .handlers import HandlerRunner, MethodHandler

# A Protocol for the type checker only: defining one costs every server's start tens
# of µs, and nothing checks it at run time.
if TYPE_CHECKING:
    class MountedServer(Protocol):
        """What a request handed across a mount needs of the mounted server (a
        ServerCore), besides running a handler (its dispatcher's ``run_handler``, handed
        along)."""

        @property
        def name(self) -> str: ...

        @property
        def methods(self) -> MethodRegistry[MethodHandler, Any]: ...

        @property
        def recv_middleware(self) -> list[Middleware]: ...

        @property
        def send_middleware(self) -> list[Middleware]: ...


class MountedContext(HandlerContext):
    """The parent's context as a mounted server's handler sees it: the same request,
    session (capabilities included), transport and cancellation; ``server`` (so
    ``state``, ``read_resource``) is the mounted server. Thread-safe as its origin."""

    def __init__(self, origin: HandlerContext, server: MountedServer) -> None:
        # Share the origin's request, session and transport: a copy, not a re-parse.
        self.__dict__.update(origin._shared_state())
        self._mounted = server

    @property
    def server(self) -> Any:
        return self._mounted


def call_mounted(server: MountedServer, run_handler: HandlerRunner, method: str,
                 params: dict[str, Any], ctx: HandlerContext) -> dict[str, Any]:
    """Run ``method`` with ``params`` on mounted ``server``, as the module says: its
    middleware, then its handler through ``run_handler`` (guards, scopes). -32601 when it
    does not serve ``method``; -32603 when its middleware drops the request or its answer
    (the parent's client has nobody else to wait for)."""
    mounted = MountedContext(ctx, server) if isinstance(ctx, HandlerContext) else ctx
    recv, send = tuple(server.recv_middleware), tuple(server.send_middleware)
    if not recv and not send:
        return run_handler(_handler(server, method), mounted, params)
    answers: list[Message] = []

    def terminal(message: Message) -> None:
        if not isinstance(message, Request):
            raise InternalError(f"a middleware of mounted server {server.name!r} turned "
                                f"{method} into {message!r}")
        answer: Message
        try:
            result = run_handler(_handler(server, message.method), mounted,
                                 message.params or {})
            answer = Response(message.id, result)
        except MCPError as exc:
            answer = ErrorResponse(message.id, exc.to_wire())
        compose(send, answers.append)(answer)

    compose(recv, terminal)(Request(ctx.request_id, method, params))
    if not answers:
        raise InternalError(f"a middleware of mounted server {server.name!r} dropped "
                            f"{method}")
    final = answers[-1]
    if isinstance(final, ErrorResponse):
        raise MCPError.from_wire(final.error)
    if isinstance(final, Response):
        return final.result
    raise InternalError(f"a middleware of mounted server {server.name!r} answered {method} "
                        f"with {final!r}")


def _handler(server: MountedServer, method: str) -> MethodHandler:
    handler = server.methods.request_handler(method)
    if handler is None:
        raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
    return handler


def error_out(exc: MCPError, field: str, inner: str, outer: str) -> MCPError:
    """A mounted server's error about ``inner`` (a name or URI, in ``data[field]`` and at
    the end of the message) told about ``outer``, the parent's name for it: an unknown
    prefixed name fails exactly as an unknown name of the parent's own."""
    data = exc.data
    if not (isinstance(data, dict) and data.get(field) == inner) or inner == outer:
        return exc
    message = exc.message
    if message.endswith(inner):
        message = message[:-len(inner)] + outer
    return MCPError.from_wire({"code": exc.code, "message": message,
                               "data": {**data, field: outer}})
