"""``mcpsync.Server``: the server definition with tasks and Streamable HTTP, assembled.

:class:`~mcpsync.server.server.ServerCore` is what a server *is* (identity, registries,
method table, sessions, stdio); it imports neither ``mcpsync.http`` (which serves a
server over HTTP, so stands above it) nor ``mcpsync.tasks`` (an extension, which plugs in
through ``ServerCore.use`` as user code would). The class users know as ``Server`` is
assembled here, one floor above all three: the core, the tasks extension it uses from
its construction (:class:`~mcpsync.tasks.Tasks`, with the ``task_*`` options), and
``wsgi_app``/``run_http``, which hand it to :mod:`mcpsync.http`. HTTP is imported on
first use, so a stdio server does not pay for it at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .server.options import ProtocolOptions, ServerDetails, ServerLimits
from .server.server import ServerCore
from .task_options import TaskOptions
from .tasks.methods import Tasks
from .telemetry.config import Telemetry

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .http.options import WsgiKeywords, WsgiOptions
    from .http.wsgi import McpWsgiApp
    from .server.visibility import Permission
    from .stores.tasks import TaskStore
    from .tasks.executor import TaskExecutor
    from .tasks.surface import TaskSurfaces
    from .tasks.tool_options import TaskSupport
    from .types import Icon, ToolAnnotations

F = TypeVar("F", bound=Callable[..., Any])


class Server(ServerCore):
    """An MCP server definition, with tasks and Streamable HTTP (see :class:`ServerCore
    <mcpsync.server.server.ServerCore>` for everything but these).

    ``task_store``: where tasks live (a :class:`~mcpsync.tasks.MemoryTaskStore` by
    default); ``task_executor``: where tasks run (threads of this process by default; a
    :class:`mcpsync.celery.CeleryExecutor` queues them on Celery, docs/celery.md);
    ``task_options`` (:class:`~mcpsync.task_options.TaskOptions`): tasks running
    at once in this process, how long a task's record is kept, the polling interval
    suggested to clients. See docs/tasks.md.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        details: ServerDetails | None = None,
        lifespan: Callable[[Server], Any] | None = None,
        request_state_key: bytes | str | None = None,
        limits: ServerLimits | None = None,
        protocol: ProtocolOptions | None = None,
        telemetry: bool | Telemetry = True,
        task_store: TaskStore | None = None,
        task_executor: TaskExecutor | None = None,
        task_options: TaskOptions | None = None,
    ) -> None:
        task_options = task_options or TaskOptions()
        super().__init__(
            name, version, title=title, instructions=instructions, details=details,
            lifespan=lifespan, request_state_key=request_state_key, limits=limits,
            protocol=protocol, telemetry=telemetry)
        self._task_extension = self.use(Tasks(task_store, max_running=task_options.max_running,
                                             ttl_ms=task_options.ttl_ms,
                                             poll_interval_ms=task_options.poll_interval_ms,
                                             executor=task_executor))

    if TYPE_CHECKING:
        # The registration decorators as a Server's extensions (tasks, visibility) type
        # them: the core takes their keywords as **options and has them checked by the
        # extension that declared each at registration (docs/architecture.md,
        # "Extensions own their options"). Types only: at run time these are the core's.
        @overload
        def tool(self, fn: F, /) -> F: ...

        @overload
        def tool(
            self, name: str | None = None, *, title: str | None = None,
            description: str | None = None,
            annotations: ToolAnnotations | dict[str, Any] | None = None,
            icons: list[Icon] | None = None, meta: dict[str, Any] | None = None,
            structured_output: bool | None = None, input_schema: dict[str, Any] | None = None,
            scopes: Iterable[str] = (), task: TaskSupport = "forbidden",
            defer_task: bool = False, executor: TaskExecutor | None = None,
            retry_safe: bool = False, permission: Permission | None = None,
            tags: Iterable[str] = (), **options: Any,
        ) -> Callable[[F], F]: ...

        def tool(self, name: Any = None, **options: Any) -> Any: ...

        def add_tool(
            self, fn: Callable[..., Any], *, name: str | None = None,
            title: str | None = None, description: str | None = None,
            annotations: ToolAnnotations | dict[str, Any] | None = None,
            icons: list[Icon] | None = None, meta: dict[str, Any] | None = None,
            structured_output: bool | None = None, input_schema: dict[str, Any] | None = None,
            scopes: Iterable[str] = (), task: TaskSupport = "forbidden",
            defer_task: bool = False, executor: TaskExecutor | None = None,
            retry_safe: bool = False, permission: Permission | None = None,
            tags: Iterable[str] = (), **options: Any,
        ) -> None: ...

        def resource(
            self, uri: str, *, name: str | None = None, title: str | None = None,
            description: str | None = None, mime_type: str | None = None,
            size: int | None = None, icons: list[Icon] | None = None,
            annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
            scopes: Iterable[str] = (), permission: Permission | None = None,
            tags: Iterable[str] = (), **options: Any,
        ) -> Callable[[F], F]: ...

        def prompt(
            self, name: str | None = None, *, title: str | None = None,
            description: str | None = None, icons: list[Icon] | None = None,
            meta: dict[str, Any] | None = None, scopes: Iterable[str] = (),
            permission: Permission | None = None, tags: Iterable[str] = (), **options: Any,
        ) -> Callable[[F], F]: ...

    # -- tasks -----------------------------------------------------------------------------

    @property
    def _tasks(self) -> TaskSurfaces:
        """The task surfaces (v1 and the v2 extension) and their runner, made on first use
        with ``task_store`` (a :class:`~mcpsync.tasks.MemoryTaskStore` by default)."""
        return self._task_extension.surfaces

    @property
    def task_store(self) -> TaskStore:
        """Where this server's tasks live (see ``Server(task_store=...)``). Assignable
        until the first task surface is used (``mcpsync serve --task-store`` sets it)."""
        return self._task_extension.store

    @task_store.setter
    def task_store(self, store: TaskStore) -> None:
        self._task_extension.store = store

    def close_tasks(self, timeout: float = 5.0) -> bool:
        """Stop the tasks running in this process (each ends ``failed``: "the server
        stopped") and join their threads; False if some still ran after ``timeout``."""
        return self._task_extension.close(timeout)

    # -- HTTP ------------------------------------------------------------------------------

    def wsgi_app(self, options: WsgiOptions | None = None,
                 **keywords: Unpack[WsgiKeywords]) -> McpWsgiApp:
        """This server as a WSGI application speaking Streamable HTTP (both eras): the
        same parameters as :class:`mcpsync.http.McpWsgiApp`, typed the same way (a
        :class:`~mcpsync.http.options.WsgiOptions`, and flat keywords each naming one of
        its fields), so a misspelt keyword is caught by a type checker too."""
        from .http.wsgi import McpWsgiApp

        return McpWsgiApp(self, options, **keywords)

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Serve over HTTP on mcpsync's development server: one reader reads each request
        whole under a deadline, then a bounded pool runs it (see :func:`mcpsync.http.serve`)."""
        from .http import serve

        serve(self, host, port, **options)

    # -- routes as tools (docs/routes.md) --------------------------------------------------

    @classmethod
    def from_openapi(cls, spec: Any, *, name: str | None = None, **options: Any) -> Server:
        """A server whose tools are ``spec``'s operations, called over HTTP with
        ``requests``; see :func:`mcpsync.routes.fill_from_openapi` for the options."""
        from .routes import fill_from_openapi, load_document

        document = load_document(spec, session=options.get("session"),
                                 limits=options.get("limits"))
        server = cls(name or document.title)
        fill_from_openapi(server, document, **options)
        return server

    @classmethod
    def from_wsgi(cls, app: Any, *, name: str | None = None, **options: Any) -> Server:
        """A server whose tools are ``app``'s routes, each called into the WSGI app in
        process; see :func:`mcpsync.routes.fill_from_wsgi` for the options."""
        from .routes import fill_from_wsgi

        server = cls(name or str(getattr(app, "name", None) or "app"))
        fill_from_wsgi(server, app, **options)
        return server


__all__ = ["Server"]
