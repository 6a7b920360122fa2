"""``ServerDefinition``: what a server answers — its registries, its method table and
the scopes a handler runs in.

The base of :class:`~mcpsync.server.server.ServerCore` (which adds identity, sessions,
lifespan, capabilities, extensions and mounts: serving) and so of :class:`mcpsync.Server`.
It owns all of its state and knows nothing of how it is served: a change of a list is
handed to the ``on_list_change`` it is given. Apart from ``server.py`` because the
public API must stay on one class while neither half fits in one module: the
registration decorators here, the serving entry points there.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

from ..dispatch.context import HandlerContext
from ..dispatch.registry import MethodRegistry
from ..dispatch.typed import ToolBinding
from ..protocol.uritemplate import is_template
from ..types import Icon, ToolAnnotations
from .completions import Completions
from .component_options import ComponentOptions, Kind, OptionSpec
from .handlers import MethodHandler, ScopeFactory
from .prompts import Completer, PromptRegistry, describe_prompt
from .resources import ResourceRegistry, describe_resource
from .scopes import as_scopes
from .session import ServerSession
from .tools import RegisteredTool, ToolRegistry, describe

F = TypeVar("F", bound=Callable[..., Any])

#: A notification handler: gets the session and the raw params.
NotificationHandler = Callable[[ServerSession, dict[str, Any]], None]


class ServerDefinition:
    """The registries (tools, resources, prompts, completers), the method table and the
    request scopes of one server, with the decorators that fill them. Thread-safe.
    ``name`` names the method table in its errors; ``on_list_change(kind)`` is told of
    each change of the tools, resources or prompts (the server announces it)."""

    def __init__(self, name: str, on_list_change: Callable[[str], None]) -> None:
        self.tools = ToolRegistry(on_change=lambda: on_list_change("tools"))
        self.resources = ResourceRegistry(on_change=lambda: on_list_change("resources"))
        self.prompts = PromptRegistry(on_change=lambda: on_list_change("prompts"))
        self._completions = Completions(self.prompts, self.resources)
        #: Every method this server answers and notification it hears (built-ins, custom
        #: methods, extensions): see :meth:`method_handler`, :meth:`notification_handler`.
        self.methods: MethodRegistry[MethodHandler, NotificationHandler] = MethodRegistry(
            f"server {name!r}")
        #: Context-manager factories entered around every method handler, on its thread
        #: (see :meth:`request_scope`); outermost first. The server's dispatcher enters
        #: them (``dispatcher.py``), a task's runner too (read at each request).
        self._request_scopes: list[ScopeFactory] = []
        #: The per-component keywords extensions declared (``task=``, ``permission=``...):
        #: see :meth:`declare_options`.
        self._component_options = ComponentOptions()

    def declare_options(self, spec: OptionSpec) -> None:
        """Accept ``spec``'s keywords on the registration decorators from now on (an
        extension calls it at install; see :mod:`mcpsync.server.component_options`).
        ``ValueError`` when its key or a keyword of the same kind is declared already."""
        self._component_options.declare(spec)

    # -- tools, resources, prompts, completers ---------------------------------------------

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
        input_schema: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
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
        input_schema: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> Any:
        """Register a plain function as a tool: ``@server.tool()`` or ``@server.tool("name")``.

        The input schema comes from the type hints, the description from the docstring, and
        a structured return type adds an output schema. A parameter annotated
        ``HandlerContext`` receives the request's context. ``input_schema`` replaces the
        derived schema with a hand-written one (advertised verbatim, arguments validated
        against it and passed as they arrive; a ``**kwargs`` parameter receives them all).

        ``scopes=["files:write"]``: the caller's access token (``ctx.auth``) must carry
        these OAuth scopes; over HTTP with ``auth=`` a call without them is a 403
        ``insufficient_scope`` naming them, elsewhere a JSON-RPC error. See docs/auth.md.

        ``**options``: the keywords the server's extensions declare (see
        :mod:`mcpsync.server.component_options`): on an ``mcpsync.Server``, the tasks
        extension's ``task=``, ``defer_task=``, ``executor=``, ``retry_safe=``
        (docs/tasks.md) and visibility's ``permission=``, ``tags=`` (docs/permissions.md).
        Any other keyword is a ``TypeError`` naming the known ones, raised here.
        """
        if callable(name):
            self.add_tool(name)
            return name
        claimed = self._component_options.claim("tool", options, "tool()")

        def register(fn: F) -> F:
            self._add_tool(fn, claimed, name=name, title=title, description=description,
                           annotations=annotations, icons=icons, meta=meta,
                           structured_output=structured_output, input_schema=input_schema,
                           scopes=scopes)
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
        input_schema: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> None:
        """Register ``fn`` as a tool (the non-decorator form of :meth:`tool`)."""
        self._add_tool(fn, self._component_options.claim("tool", options, "add_tool()"),
                       name=name, title=title, description=description,
                       annotations=annotations, icons=icons, meta=meta,
                       structured_output=structured_output, input_schema=input_schema,
                       scopes=scopes)

    def _add_tool(self, fn: Callable[..., Any], options: Mapping[str, object], *,
                  name: str | None, title: str | None, description: str | None,
                  annotations: ToolAnnotations | dict[str, Any] | None,
                  icons: list[Icon] | None, meta: dict[str, Any] | None,
                  structured_output: bool | None, input_schema: dict[str, Any] | None,
                  scopes: Iterable[str]) -> None:
        binding = ToolBinding.from_function(
            fn, name=name, description=description, structured_output=structured_output,
            context_type=HandlerContext, input_schema=input_schema,
        )
        wire = describe(binding, title=title, annotations=annotations, icons=icons, meta=meta)
        self._component_options.describe("tool", options, wire)
        self.tools.add(RegisteredTool(binding, wire, scopes=as_scopes(scopes),
                                      options=options))

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; connected clients are told the list changed."""
        self.tools.remove(name)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: list[Icon] | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> Callable[[F], F]:
        """Register a function that reads a resource.

        ``uri`` is a fixed URI (listed by ``resources/list``) or an RFC 6570 template such as
        ``"weather://cities/{city}"`` (listed by ``resources/templates/list``); template
        variables are passed as keyword arguments, converted to the annotated scalar type.
        Return ``str`` (text), ``bytes`` (a blob), JSON-able data (JSON text), or
        ``TextResourceContents``/``BlobResourceContents`` (one or a list).

        ``scopes=["notes:read"]``: the reader's access token must carry these OAuth scopes
        to read, subscribe to or complete it (as for :meth:`tool`). See docs/auth.md.
        ``**options``: the keywords the server's extensions declare (as for :meth:`tool`).
        """
        as_scopes(scopes)  # a bad scopes= fails at the decorator, not at the first read
        kind: Kind = "template" if is_template(uri) else "resource"
        claimed = self._component_options.claim(kind, options, "resource()")

        def register(fn: F) -> F:
            resource = describe_resource(
                fn, uri, name=name, title=title, description=description, mime_type=mime_type,
                size=size, icons=icons, annotations=annotations, meta=meta, scopes=scopes,
                options=claimed)
            self._component_options.describe(kind, claimed, resource.description)
            self.resources.add(resource)
            return fn

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> Callable[[F], F]:
        """Register a function that renders a prompt.

        Its parameters (strings, or scalars converted from strings) are the prompt's
        arguments: required unless they have a default, described by the docstring's
        ``Args:`` section. Return a ``str`` (one user message), content blocks,
        ``PromptMessage``/``{"role", "content"}`` items, a list of those, or a
        ``GetPromptResult``.

        ``scopes=["reports"]``: the caller's access token must carry these OAuth scopes to
        get or complete it (as for :meth:`tool`). See docs/auth.md.
        ``**options``: the keywords the server's extensions declare (as for :meth:`tool`).
        """
        as_scopes(scopes)
        claimed = self._component_options.claim("prompt", options, "prompt()")

        def register(fn: F) -> F:
            prompt = describe_prompt(fn, name=name, title=title, description=description,
                                     icons=icons, meta=meta, scopes=scopes, options=claimed)
            self._component_options.describe("prompt", claimed, prompt.description)
            self.prompts.add(prompt)
            return fn

        return register

    def completer(self, ref: str, argument: str) -> Callable[[Completer], Completer]:
        """Register ``fn(value, context_arguments) -> [suggestions]`` for completion/complete.

        ``ref`` is a prompt name or a resource template; ``argument`` the prompt argument or
        template variable. At most 100 suggestions are sent (``total`` says how many).
        """
        def register(fn: Completer) -> Completer:
            self._completions.add(ref, argument, fn)
            return fn

        return register

    # -- the method table and the request scopes -------------------------------------------

    def method_handler(
        self, method: str, *, replace: bool = False
    ) -> Callable[[MethodHandler], MethodHandler]:
        """Register a raw handler for any method: ``fn(ctx, params) -> result dict``.

        The escape hatch for methods mcpsync has no typed support for; it replaces a
        built-in handler of the same name. Registering a method that already has a custom
        handler raises :class:`~mcpsync.DuplicateHandlerError` unless ``replace=True``.
        An exception becomes the error answer (an ``MCPError`` keeps its code, anything
        else is -32603). A custom method adds nothing to the declared capabilities.
        """

        def register(fn: MethodHandler) -> MethodHandler:
            self.methods.add_request(method, fn, replace=replace)
            return fn

        return register

    def request_scope(self, fn: Callable[[HandlerContext], Any]) -> Callable[
            [HandlerContext], Any]:
        """Run setup and teardown around every request, on the request's own thread.

        ``fn(ctx)`` returns a context manager, or is a generator function (it is then
        wrapped with :func:`contextlib.contextmanager`): the code before ``yield`` runs on
        the handler thread before the handler, the code after it (put it in ``finally``)
        when the handler has returned, raised or been cancelled. This is where a
        thread-bound resource belongs (a SQLAlchemy ``scoped_session``, a SQLite
        connection), because handler threads are reused::

            @server.request_scope
            def db_session(ctx):
                try:
                    yield
                finally:
                    Session.remove()

        Scopes wrap every method that reaches a handler (``tools/call``, ``resources/read``,
        ``tools/list``…; check ``ctx.method`` to pick), not ``initialize``. An exception
        from a scope fails that request like one from the handler. Under 2026-07-28 a
        handler that asks the client a question ends its attempt, and the retry runs the
        scope again. A tool running as a task runs inside the scopes too, entered on the
        task's own thread (``ctx`` is then its :class:`~mcpsync.tasks.TaskContext`). Work
        handed to another thread (``ctx.detach()``) is outside it.
        """
        factory: ScopeFactory = (contextlib.contextmanager(fn)
                                 if inspect.isgeneratorfunction(fn) else fn)
        self._request_scopes.append(factory)
        return fn

    def notification_handler(
        self, method: str
    ) -> Callable[[NotificationHandler], NotificationHandler]:
        """Register ``fn(session, params)`` for an inbound notification.

        A method may have several handlers: each runs, in the order registered, on the
        session's notification thread; one that raises is logged and the next still runs.
        Notifications nobody handles are ignored, as the spec says.
        """

        def register(fn: NotificationHandler) -> NotificationHandler:
            self.methods.add_notification(method, fn)
            return fn

        return register

    def wrap_method(self, method: str,
                    wrapper: Callable[[MethodHandler], MethodHandler]) -> None:
        """Replace the handler of ``method`` with ``wrapper(handler)``, which calls the
        handler it was given for what it does not handle itself. The wrapper stays a
        built-in if the handler was one (a later ``method_handler`` replaces it), so the
        order in which extensions, mounts and built-ins were installed decides nothing but
        the nesting. ``KeyError`` when ``method`` has no handler. Meant for set-up time."""
        handler = self.methods.request_handler(method)
        if handler is None:
            raise KeyError(method)
        if self.methods.is_default(method):
            self.methods.set_default(method, wrapper(handler))
        else:
            self.methods.add_request(method, wrapper(handler), replace=True)


__all__ = ["NotificationHandler", "ServerDefinition"]
