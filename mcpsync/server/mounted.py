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
per-item OAuth scopes (:meth:`Server.run_handler`), its handler, and its send middleware
(the answer, before the parent re-prefixes it). The handler's context is the parent's,
except that ``ctx.server``/``ctx.state``/``ctx.read_resource`` are the mounted server's
and the client appears not to speak the extensions the mounted server uses (``Server.use``:
the tasks extension of every ``mcpsync.Server``): an extension serves its own server's
clients, and tasks are not routed across a mount. Notifications the handler sends go out
through the parent's send middleware.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from ..dispatch.context import HandlerContext
from ..dispatch.inbound import compose
from ..dispatch.ports import SessionInfo
from ..dispatch.registry import MethodRegistry
from ..engine.connection import Middleware
from ..errors import InternalError, MCPError, MethodNotFoundError
from ..protocol.jsonrpc import ErrorResponse, Message, Request, Response
from .extensions import Extensions
from .handlers import MethodHandler


class MountedServer(Protocol):
    """What a request handed across a mount needs of the mounted server (a ServerCore)."""

    @property
    def name(self) -> str: ...

    @property
    def methods(self) -> MethodRegistry[MethodHandler, Any]: ...

    @property
    def recv_middleware(self) -> list[Middleware]: ...

    @property
    def send_middleware(self) -> list[Middleware]: ...

    @property
    def extensions(self) -> Extensions: ...

    def run_handler(self, handler: MethodHandler, ctx: HandlerContext,
                    params: dict[str, Any]) -> dict[str, Any]: ...


class MountedContext(HandlerContext):
    """The parent's context as a mounted server's handler sees it: the same request,
    session, transport and cancellation; ``server`` (so ``state``, ``read_resource``) is
    the mounted server; the extensions it uses are hidden. Thread-safe as its origin."""

    def __init__(self, origin: HandlerContext, server: MountedServer) -> None:
        # Share the origin's request, session and transport: a copy, not a re-parse.
        self.__dict__.update(origin._shared_state())
        self._mounted = server
        self._hidden = server.extensions.identifiers
        self.meta = _without(origin.meta, self._hidden)

    @property
    def server(self) -> Any:
        return self._mounted

    @property
    def session(self) -> SessionInfo:
        info = self._session.info
        caps = info.client_capabilities
        if not _declares(caps, self._hidden):
            return info
        return SessionInfo(protocol_version=info.protocol_version,
                           client_info=info.client_info,
                           client_capabilities=_strip_extensions(caps, self._hidden),
                           session_id=info.session_id)


def _declares(caps: Any, hidden: Collection[str]) -> bool:
    """Whether capabilities ``caps`` declare one of the ``hidden`` extensions."""
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and any(key in extensions for key in hidden)


def _strip_extensions(caps: dict[str, Any], hidden: Collection[str]) -> dict[str, Any]:
    extensions = {k: v for k, v in caps["extensions"].items() if k not in hidden}
    return {**caps, "extensions": extensions}


def _without(meta: dict[str, Any], hidden: Collection[str]) -> dict[str, Any]:
    changed = {key: _strip_extensions(value, hidden) for key, value in meta.items()
               if _declares(value, hidden)}
    return {**meta, **changed} if changed else meta


def call_mounted(server: MountedServer, method: str, params: dict[str, Any],
                 ctx: HandlerContext) -> dict[str, Any]:
    """Run ``method`` with ``params`` on mounted ``server``, as the module says: its
    middleware, scopes and handler. -32601 when it does not serve ``method``; -32603 when
    its middleware drops the request or its answer (the parent's client has nobody else
    to wait for)."""
    mounted = MountedContext(ctx, server) if isinstance(ctx, HandlerContext) else ctx
    recv, send = tuple(server.recv_middleware), tuple(server.send_middleware)
    if not recv and not send:
        return server.run_handler(_handler(server, method), mounted, params)
    answers: list[Message] = []

    def terminal(message: Message) -> None:
        if not isinstance(message, Request):
            raise InternalError(f"a middleware of mounted server {server.name!r} turned "
                                f"{method} into {message!r}")
        answer: Message
        try:
            result = server.run_handler(_handler(server, message.method), mounted,
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
