"""The tasks extension as a server uses it: :class:`Tasks`, ``server.use(Tasks(...))``.

Every :class:`mcpsync.Server` uses one from its construction (its ``task_store=``,
``task_executor=`` and ``task_options=`` are this class's options); a bare
:class:`~mcpsync.server.server.ServerCore` serves no tasks until it uses one. Installing
it wraps ``tools/call`` (a tool registered with ``task=`` may run as a task; every other
call goes to the handler it wraps) and registers the ``tasks/*`` methods as built-ins (a
user's handler may replace them).

Why a module of its own: the registration happens when a server is made, but the
surfaces, the runner and the store behind them are made on first use. Keeping the
registration apart from :mod:`.surface` keeps their imports off a server's start-up (see
``docs/benchmarks.md``, cold start).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.versions import features
from ..server.listen import Followed
from .bounds import DEFAULT_TTL_MS
from .tool_options import KEY, SPEC, task_tool
from .wire import EXTENSION, STATUS_METHOD, TASK_IDS

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext
    from ..server.server import ServerCore
    from ..server.tools import RegisteredTool
    from ..stores.tasks import TaskStore
    from .executor import TaskExecutor, TaskLaunch
    from .surface import TaskSurfaces

Handler = Callable[["HandlerContext", dict[str, Any]], dict[str, Any]]
#: The ``tasks/*`` methods, each served by the :class:`TaskSurfaces` method of its name.
METHODS = ("get", "update", "cancel", "result", "list")


class Tasks:
    """The tasks extension of one server: v1 (2025-11-25) and the SEP-2663 extension.

    ``store``: where tasks live (a :class:`~mcpsync.tasks.MemoryTaskStore`, made on first
    use, by default). ``max_running``: tasks running at once in this process.
    ``ttl_ms``: the ``ttlMs`` of a v2 task, and the most a v1 client may ask for.
    ``poll_interval_ms``: the polling interval suggested to clients. ``executor``: where
    tasks run (a :class:`~mcpsync.tasks.executor.ThreadExecutor` of ``max_running``
    threads by default; a :class:`mcpsync.celery.CeleryExecutor` queues them on Celery; a
    tool may name its own with ``@server.tool(task=..., executor=...)``). Thread-safe.
    """

    identifier = EXTENSION
    #: A task-augmented call answers a CreateTaskResult, ``resultType: "task"``.
    result_types = frozenset({"task"})

    def __init__(self, store: TaskStore | None = None, *, max_running: int = 64,
                 ttl_ms: int | None = DEFAULT_TTL_MS, poll_interval_ms: int = 500,
                 executor: TaskExecutor | None = None) -> None:
        self._store = store
        self._executor = executor
        self._options = (max_running, ttl_ms, poll_interval_ms)
        self._server: ServerCore | None = None
        self._surfaces: TaskSurfaces | None = None
        self._lock = threading.Lock()

    # -- Extension -------------------------------------------------------------------------

    def install(self, server: ServerCore) -> None:
        """Wrap ``tools/call`` and register the ``tasks/*`` methods on ``server`` as
        built-ins. The surfaces, runner and store are made on first use: a server whose
        tools never run as tasks never makes them."""
        if self._server is not None:
            raise ValueError("a Tasks extension serves one server only")
        self._server = server
        # Its four tool keywords (task=, defer_task=, executor=, retry_safe=) are declared
        # here, not by the core: a tool carries them as a TaskTool under options["tasks"].
        server.declare_options(SPEC)
        server.wrap_method("tools/call", self._call_tool)
        server.wrap_method("tools/list", _list_tools)
        for method in METHODS:
            server.methods.set_default(f"tasks/{method}", self._deferred(method))
        # A listen's notifications.taskIds: statuses announced through publish_status.
        server._follow(Followed(TASK_IDS, STATUS_METHOD, self.fetch))
        # An executor that runs tasks in another process finds them through this
        # extension: the server's, and each a tool names (now and when added later).
        if self._executor is not None:
            self._executor.bind(self)
        server.tools.watchers.append(self._bind_tool)
        for tool in server.tools.all():
            self._bind_tool(tool)

    def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
        """v1's ``tasks`` capability to a 2025-11-25 client; the extension to every one."""
        if features(version).tasks_v1:
            capabilities["tasks"] = {"list": {}, "cancel": {},
                                     "requests": {"tools": {"call": {}}}}
        capabilities["extensions"] = {**capabilities.get("extensions", {}), EXTENSION: {}}

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the tasks running in this process (each ends ``failed``: "the server
        stopped") and join their threads; False if some still ran after ``timeout``."""
        with self._lock:
            surfaces = self._surfaces
        return True if surfaces is None else surfaces.runner.close(timeout)

    # -- the surfaces, made on first use ---------------------------------------------------

    @property
    def surfaces(self) -> TaskSurfaces:
        """The task surfaces (v1 and the v2 extension) and their runner, made on first use
        with the store (a :class:`~mcpsync.tasks.MemoryTaskStore` by default)."""
        with self._lock:
            if self._surfaces is None:
                if self._server is None:
                    raise RuntimeError("the Tasks extension is not installed on a server "
                                       "(server.use(Tasks(...)))")
                from .runner import TaskRunner
                from .surface import TaskSurfaces

                if self._store is None:
                    from .memory import MemoryTaskStore

                    self._store = MemoryTaskStore()
                running, ttl_ms, poll_ms = self._options
                telemetry = self._server._dispatcher.telemetry
                runner = TaskRunner(self._store, max_running=running, executor=self._executor,
                                    telemetry=telemetry)
                telemetry.gauges.track("tasks.running", runner, lambda r: r.running())
                self._surfaces = TaskSurfaces(self._server, runner, ttl_ms=ttl_ms,
                                              poll_interval_ms=poll_ms)
            return self._surfaces

    @property
    def store(self) -> TaskStore:
        """Where the tasks live. Assignable until the surfaces are made (the first task
        method served: ``mcpsync serve --task-store`` sets it before)."""
        return self.surfaces.store

    @store.setter
    def store(self, store: TaskStore) -> None:
        with self._lock:
            if self._surfaces is not None:
                raise RuntimeError("the task store can only be set before tasks are served")
            self._store = store

    def fetch(self, task_id: str, owner: str) -> tuple[int, dict[str, Any]] | None:
        """A v2 task's ``(version, DetailedTask)`` from the store, for a listen that heard
        of a status too large for the bus; None when gone or not ``owner``'s."""
        from .wire import v2_detailed

        record = self.surfaces.store.get(task_id, owner)
        if record is None or record.surface != "v2":
            return None
        return record.version, v2_detailed(record)

    def _bind_tool(self, tool: RegisteredTool) -> None:
        options = task_tool(tool.options)
        if options is None or options.executor is None:
            return  # the server's executor (and the surfaces are not imported at start-up)
        from .surface import executor_of

        executor = executor_of(tool)
        if executor is not None:
            executor.bind(self)

    def payload(self, launch: TaskLaunch) -> dict[str, Any]:
        """``launch`` as the message a :class:`mcpsync.celery.CeleryExecutor` queues,
        signed with this server's ``request_state_key``. That key must be configured: a
        key made up by this process would verify on no worker, so the call is refused at
        once (-32603, saying what to set) rather than every task failing later."""
        from ..errors import INTERNAL_ERROR, MCPError
        from .remote import payload

        server = self._server
        assert server is not None
        if not server._dispatcher.state_key_shared:
            raise MCPError("this server cannot queue tasks for other processes: it has no "
                           "request_state_key to sign them with (set "
                           "Server(request_state_key=...) or MCPSYNC_REQUEST_STATE_KEY, the "
                           "same in the web and worker processes)", code=INTERNAL_ERROR)
        return payload(launch, server._dispatcher.state_key)

    def run_payload(self, data: dict[str, Any]) -> str:
        """Run a task queued by another process of this server (its record is in the
        store): what a :class:`mcpsync.celery.CeleryExecutor` worker calls. See
        :mod:`mcpsync.tasks.remote`."""
        from .remote import run_payload

        return run_payload(self.surfaces, data)

    # -- the handlers ----------------------------------------------------------------------

    def _call_tool(self, inner: Handler) -> Handler:
        """``tools/call``: a tool that may run as a task goes to the surfaces; every other
        call to ``inner``, the handler this one wraps."""
        assert self._server is not None
        tools = self._server.tools
        # The built-in is handed the tool found here: one lookup per call, not two.
        builtin = inner == tools.call

        def call_tool(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            name = params.get("name")
            tool = tools.find(name, ctx) if isinstance(name, str) else None
            if tool is None or KEY not in tool.options:
                return tools.call(ctx, params, tool) if builtin else inner(ctx, params)
            return self.surfaces.call_tool(ctx, params, tool)

        return call_tool

    def _deferred(self, name: str) -> Handler:
        def handler(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            method: Handler = getattr(self.surfaces, name)
            return method(ctx, params)

        return handler

    def __repr__(self) -> str:
        return f"<Tasks {EXTENSION}>"


def _list_tools(inner: Handler) -> Handler:
    """``tools/list`` without ``execution`` (a tool's ``taskSupport``) for a client whose
    revision has no tasks (before 2025-11-25)."""

    def list_tools(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        result = inner(ctx, params)
        version = ctx.session.protocol_version
        if version is None or features(version).tasks_v1 or features(version).era == "modern":
            return result
        tools = result.get("tools")
        if isinstance(tools, list) and any(isinstance(t, dict) and "execution" in t
                                           for t in tools):
            result = {**result, "tools": [
                {k: v for k, v in t.items() if k != "execution"} if isinstance(t, dict) else t
                for t in tools]}
        return result

    return list_tools
