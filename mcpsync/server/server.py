"""``Server``: the definition of an MCP server — its identity, tools and method table.

A Server is a definition, not a connection: one Server serves any number of sessions at
once (a stdio stream, many HTTP clients, in-memory test clients). Register tools and
handlers before serving or while serving: registries are thread-safe and a change is
announced to connected clients.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, overload

from ..dispatch.context import HandlerContext
from ..dispatch.typed import ToolBinding
from ..engine.connection import Middleware
from ..protocol.versions import LEGACY_VERSIONS, features
from ..transports.base import Transport
from ..types import Icon, ToolAnnotations
from .session import ServerSession
from .tools import RegisteredTool, ToolRegistry, describe

F = TypeVar("F", bound=Callable[..., Any])

#: A raw method handler: gets the context and the raw params, returns the raw result.
MethodHandler = Callable[[HandlerContext, dict[str, Any]], dict[str, Any]]
NotificationHandler = Callable[[ServerSession, dict[str, Any]], None]


class Server:
    """An MCP server definition.

    ``max_concurrent_handlers`` caps how many requests of one session run at once (each on
    its own thread); more wait in a bounded queue. ``request_timeout`` bounds the server's
    own requests to the client (``ctx.request`` and friends). Thread-safe.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[Icon] | None = None,
        max_concurrent_handlers: int = 64,
        request_timeout: float = 60.0,
        page_size: int = 100,
        legacy_versions: tuple[str, ...] = LEGACY_VERSIONS,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.instructions = instructions
        self.website_url = website_url
        self.icons = icons
        self.max_concurrent_handlers = max_concurrent_handlers
        self.request_timeout = request_timeout
        self.page_size = page_size
        self.legacy_versions = legacy_versions
        #: Middleware on every message this server sends / receives; outermost first. A
        #: session takes a copy when it connects: change these before serving.
        self.send_middleware: list[Middleware] = []
        self.recv_middleware: list[Middleware] = []
        self.tools = ToolRegistry(on_change=lambda: self._broadcast_list_changed("tools"))
        self.method_handlers: dict[str, MethodHandler] = {}
        self.notification_handlers: dict[str, NotificationHandler] = {}
        self._sessions: set[ServerSession] = set()
        self._sessions_lock = threading.Lock()
        self._install_core_methods()

    # -- identity ------------------------------------------------------------------------

    def info_for(self, version: str | None) -> dict[str, Any]:
        """``serverInfo`` with only the fields ``version`` knows."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        rules = features(version) if version else None
        if (rules is None or rules.titles) and self.title:
            info["title"] = self.title
        if rules is None or rules.icons:
            if self.description:
                info["description"] = self.description
            if self.website_url:
                info["websiteUrl"] = self.website_url
            if self.icons:
                info["icons"] = [icon.to_dict() for icon in self.icons]  # type: ignore[attr-defined]
        return info

    def capabilities(self) -> dict[str, Any]:
        """What this server declares, derived from what is registered."""
        caps: dict[str, Any] = {"tools": {"listChanged": True}, "logging": {}}
        return caps

    # -- registration --------------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: Any = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Any:
        """Register a plain function as a tool: ``@server.tool()`` or ``@server.tool("name")``.

        The input schema comes from the type hints, the description from the docstring, and
        a structured return type adds an output schema. A parameter annotated
        ``HandlerContext`` receives the request's context.
        """
        if callable(name):
            self.add_tool(name)
            return name

        def register(fn: F) -> F:
            self.add_tool(
                fn, name=name, title=title, description=description, annotations=annotations,
                icons=icons, meta=meta, structured_output=structured_output,
            )
            return fn

        return register

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        """Register ``fn`` as a tool (the non-decorator form of :meth:`tool`)."""
        binding = ToolBinding.from_function(
            fn, name=name, description=description, structured_output=structured_output,
            context_type=HandlerContext,
        )
        wire = describe(binding, title=title, annotations=annotations, icons=icons, meta=meta)
        self.tools.add(RegisteredTool(binding, wire))

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; connected clients are told the list changed."""
        self.tools.remove(name)

    def method_handler(self, method: str) -> Callable[[MethodHandler], MethodHandler]:
        """Register a raw handler for any method: ``fn(ctx, params) -> result dict``.

        The escape hatch for methods mcpsync has no typed support for; it replaces a
        built-in handler of the same name.
        """

        def register(fn: MethodHandler) -> MethodHandler:
            self.method_handlers[method] = fn
            return fn

        return register

    def notification_handler(
        self, method: str
    ) -> Callable[[NotificationHandler], NotificationHandler]:
        """Register ``fn(session, params)`` for an inbound notification."""

        def register(fn: NotificationHandler) -> NotificationHandler:
            self.notification_handlers[method] = fn
            return fn

        return register

    def _install_core_methods(self) -> None:
        handlers = self.method_handlers
        handlers["ping"] = lambda ctx, params: {}
        handlers["tools/list"] = lambda ctx, params: self.tools.list(ctx, params, self.page_size)
        handlers["tools/call"] = self.tools.call
        handlers["logging/setLevel"] = _set_level

    # -- serving -------------------------------------------------------------------------

    def connect(
        self, transport: Transport, *, name: str = "mcpsync-server", drain_timeout: float = 0.0
    ) -> ServerSession:
        """Serve one client over ``transport`` on background threads; returns its session."""
        session = ServerSession(self, transport, name=name, drain_timeout=drain_timeout)
        with self._sessions_lock:
            self._sessions.add(session)
        return session.start()

    def sessions(self) -> list[ServerSession]:
        """The sessions connected now."""
        with self._sessions_lock:
            return list(self._sessions)

    def _forget(self, session: ServerSession) -> None:
        with self._sessions_lock:
            self._sessions.discard(session)

    def _broadcast_list_changed(self, kind: str) -> None:
        for session in self.sessions():
            session.send_list_changed(kind)

    def run_stdio(self, *, drain_timeout: float = 2.0) -> None:
        """Serve one client over this process's stdin/stdout until EOF or SIGINT/SIGTERM.

        While serving, ``sys.stdout`` (and file descriptor 1) point at stderr, so a stray
        ``print`` can not corrupt the protocol stream. At EOF, running handlers get
        ``drain_timeout`` seconds to answer before they are cancelled.
        """
        from .stdio import serve_stdio

        serve_stdio(self, drain_timeout=drain_timeout)

    def __repr__(self) -> str:
        return f"Server({self.name!r}, version={self.version!r}, tools={len(self.tools)})"


def _set_level(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
    from ..errors import InvalidParamsError

    level = params.get("level")
    if not isinstance(level, str):
        raise InvalidParamsError('Invalid params: "level" must be a string')
    session = ctx._session
    if not isinstance(session, ServerSession):
        raise InvalidParamsError("logging/setLevel is only available in a session")
    session.set_log_level(level)
    return {}
