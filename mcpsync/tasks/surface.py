"""The task surfaces on a server: ``tools/call`` as a task, and the ``tasks/*`` methods.

Installed on a server by the extension :class:`~mcpsync.tasks.methods.Tasks`, through
its method registry, like a user's custom methods. Both surfaces live side by side,
chosen per request:

* **v2** (the extension ``io.modelcontextprotocol/tasks``) when the request's client
  declared it: in 2026-07-28 in the request's ``_meta`` client capabilities, in the
  handshake era in ``initialize``'s capabilities (or the request's ``_meta``). The server
  decides: a ``task="optional"`` or ``"required"`` tool then always runs as a task.
* **v1** (2025-11-25) when the session negotiated 2025-11-25 and the request carries
  ``params.task``.
* Neither: an ``optional`` tool runs as a plain call; a ``required`` one is refused
  (-32021 naming the extension; -32601 in a 2025-11-25 session, as v1 says).

Tasks are bound to their creator (:func:`~mcpsync.server.owners.owner_of`, importable
from here too): another owner's task id is answered exactly like an unknown one (-32602),
never with that task.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from ..dispatch.context import HandlerContext
from ..errors import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    InvalidParamsError,
    MCPError,
    MethodNotFoundError,
    RequestCancelledError,
)
from ..protocol.tool_outcome import tool_failed
from ..protocol.versions import META_CAPABILITIES, features
from ..server.owners import owner_of as owner_of
from ..server.owners import principal_key as principal_key
from ..stores.tasks import TaskRecord
from .bounds import TaskResultTooLargeError, clamp_ttl
from .context import TaskContext
from .executor import TaskExecutor
from .runner import TaskRunner
from .tool_options import task_tool
from .wire import EXTENSION, RELATED_TASK, TASK_IDS, related, v1_task, v2_detailed, v2_task

if TYPE_CHECKING:
    from ..server.server import ServerCore
    from ..server.tools import RegisteredTool

#: The longest a ``tasks/result`` (v1) blocks in one wait on the store.
_RESULT_SLICE = 1.0


class RunAsTask(BaseException):
    """Raised by a handler to continue as a task: ``raise RunAsTask(fn, *args)``.

    For a tool registered with ``defer_task=True``: it runs as a plain call first (so its
    questions go through the era's usual path: an ``InputRequiredResult`` round in
    2026-07-28, a request in the handshake era), then hands the long part to a task; the
    client gets the ``CreateTaskResult`` and the task runs ``fn(task_ctx, *args, **kwargs)``.
    Without a task surface (a client that did not negotiate tasks) ``fn`` runs at once,
    inside the call, with the call's own context.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__("run as task")
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


def wants_v2(ctx: HandlerContext) -> bool:
    """Whether this request's client declared the tasks extension."""
    for caps in (ctx.session.client_capabilities, ctx.meta.get(META_CAPABILITIES)):
        if isinstance(caps, dict):
            extensions = caps.get("extensions")
            if isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict):
                return True
    return False


def speaks_v1(ctx: HandlerContext) -> bool:
    version = ctx.session.protocol_version
    return version is not None and features(version).tasks_v1


def _required_error(ctx: HandlerContext, name: str) -> MCPError:
    if speaks_v1(ctx):
        return MCPError(f"Tool {name} must be called as a task (params.task)",
                        code=METHOD_NOT_FOUND)
    return MCPError(f"Missing required client capability: tool {name} only runs as a task "
                    f"(the {EXTENSION} extension)", code=MISSING_CLIENT_CAPABILITY,
                    data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}})


class TaskSurfaces:
    """``tools/call`` as a task and the ``tasks/*`` methods, for one server."""

    def __init__(self, server: ServerCore, runner: TaskRunner, *, ttl_ms: int | None,
                 poll_interval_ms: int) -> None:
        self.server = server
        self.runner = runner
        self.store = runner.store
        #: The ``ttlMs`` of a v2 task, and the most a v1 client may ask for.
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms

    # -- tools/call ------------------------------------------------------------------------

    def call_tool(self, ctx: HandlerContext, params: dict[str, Any],
                  found: RegisteredTool | None = None) -> dict[str, Any]:
        """``tools/call`` of a tool that may run as a task. ``found``: the tool, as the
        caller looked it up for this caller (``tools.find``)."""
        name = params.get("name")
        tool = found
        if tool is None and isinstance(name, str):
            tool = self.server.tools.find(name, ctx)
        options = task_tool(tool.options) if tool is not None else None
        if tool is None or options is None:
            return self.server.tools.call(ctx, params, tool)
        support = options.support
        surface: Literal["v1", "v2"] | None = None
        if wants_v2(ctx):
            surface = "v2"
        elif speaks_v1(ctx) and params.get("task") is not None:
            surface = "v1"
        if surface is None and support == "required":
            raise _required_error(ctx, str(name))
        ttl_ms = self._ttl(params, surface)
        body: Callable[[TaskContext], dict[str, Any]]
        portable = True
        if options.defer or surface is None:
            try:
                return self.server.tools.call(ctx, params)
            except RunAsTask as handoff:
                if surface is None:
                    return _finish(tool, handoff, ctx)
                body = partial(_finish, tool, handoff)
                portable = False  # the continuation is a closure only this process holds
        else:
            arguments = params.get("arguments")
            if arguments is not None and not isinstance(arguments, dict):
                raise InvalidParamsError('Invalid params: "arguments" must be an object')
            # The task runs the tool exactly as a plain call would, on its own context.
            body = partial(_call_plain, self.server, params)
        # The request scopes wrap the task's execution on its own thread, as they wrap a
        # plain call on the handler thread (a thread-bound DB session must be there too).
        body = partial(_scoped, self.server, body)
        record = self._start(ctx, params, surface, str(name), ttl_ms, body,
                             executor=executor_of(tool), retry_safe=options.retry_safe,
                             portable=portable)
        if surface == "v2":
            # ``content: []`` keeps the answer a valid core ``CallToolResult`` too (the
            # 2026-07-28 schema requires it of every tools/call result; the extension's
            # CreateTaskResult allows extra members), so a validating intermediary or
            # generic host sees a well-formed, empty tool result instead of an error.
            return {"resultType": "task", **v2_task(record), "content": []}
        return {"task": v1_task(record)}

    def _ttl(self, params: dict[str, Any], surface: str | None) -> int | None:
        ttl = self.ttl_ms
        task = params.get("task")
        if surface == "v1":
            if not isinstance(task, dict):
                raise InvalidParamsError('Invalid params: "task" must be an object')
            asked = task.get("ttl")
            if asked is not None:
                if isinstance(asked, bool) or not isinstance(asked, int) or asked < 0:
                    raise InvalidParamsError(
                        'Invalid params: "task.ttl" must be a non-negative integer')
                ttl = asked
        if self.ttl_ms is not None and (ttl is None or ttl > self.ttl_ms):
            ttl = self.ttl_ms
        return clamp_ttl(ttl, default=None)

    def _start(self, ctx: HandlerContext, params: dict[str, Any], surface: Literal["v1", "v2"],
               name: str, ttl_ms: int | None, body: Callable[[TaskContext], dict[str, Any]],
               *, executor: TaskExecutor | None, retry_safe: bool,
               portable: bool) -> TaskRecord:
        from ..server.stateless import RequestScope

        session = ctx._session
        info = ctx.session
        task_params = {k: v for k, v in params.items()
                       if k not in ("inputResponses", "requestState", "task")}

        def make_context(task_id: str, stop: threading.Event) -> TaskContext:
            return TaskContext(
                task_id=task_id, surface=surface, store=self.store, session=session,
                info=info, transport=ctx.transport, method=ctx.method, params=task_params,
                channel_usable=not isinstance(session, RequestScope), stop=stop,
                request_timeout=self.server.limits.request_timeout, publish=self.publish)

        return self.runner.start(
            owner=owner_of(ctx), surface=surface, tool=name, ttl_ms=ttl_ms,
            poll_interval_ms=self.poll_interval_ms, make_context=make_context, body=body,
            v1_failed_on_error=surface == "v1", params=task_params, info=info,
            transport={"kind": ctx.transport.kind, "remote_addr": ctx.transport.remote_addr,
                       "session_id": ctx.transport.session_id},
            executor=executor, retry_safe=retry_safe, portable=portable)

    def publish(self, record: TaskRecord) -> None:
        """A v2 task's status to the ``subscriptions/listen`` streams following it (those
        of its owner): the ``DetailedTask`` as ``notifications/tasks`` params, here and,
        once :meth:`Server.relay_events <mcpsync.Server.relay_events>` joins the workers,
        on every other worker (without it, their clients poll)."""
        self.server._publish_status(TASK_IDS, record.task_id, record.owner, record.version,
                                    v2_detailed(record))

    # -- tasks/* -----------------------------------------------------------------------------

    def _surface_of(self, ctx: HandlerContext, method: str) -> Literal["v1", "v2"]:
        if wants_v2(ctx):
            if method in ("tasks/result", "tasks/list"):
                if speaks_v1(ctx):
                    return "v1"
                raise MethodNotFoundError(f"Method not found: {method} (removed in the "
                                          f"{EXTENSION} extension)", data={"method": method})
            return "v2"
        if speaks_v1(ctx):
            if method == "tasks/update":
                raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
            return "v1"
        version = ctx.session.protocol_version
        if version is not None and features(version).era == "modern":
            raise MCPError(f"Missing required client capability: {method} needs the "
                           f"{EXTENSION} extension", code=MISSING_CLIENT_CAPABILITY,
                           data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
        raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})

    def _record(self, ctx: HandlerContext, params: dict[str, Any]) -> TaskRecord:
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParamsError('Invalid params: "taskId" must be a string')
        record = self.store.get(task_id, owner_of(ctx))
        if record is None:
            raise InvalidParamsError(f"Invalid params: unknown task {task_id!r}",
                                     data={"taskId": task_id})
        return record

    def get(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        surface = self._surface_of(ctx, "tasks/get")
        record = self._record(ctx, params)
        if surface == "v2":
            return {"resultType": "complete", **v2_detailed(record)}
        return v1_task(record)

    def update(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        self._surface_of(ctx, "tasks/update")
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParamsError('Invalid params: "inputResponses" must be an object')
        record = self._record(ctx, params)
        asked = record.input_requests or {}
        answers = {}
        for key, value in responses.items():
            if key not in asked:
                continue  # an answer to nothing this task asked: ignored, as the SEP says
            if not isinstance(value, dict):
                raise InvalidParamsError(f"Invalid params: inputResponses[{key!r}] must be an "
                                         "object")
            answers[key] = value
        if answers:
            try:
                self.store.answer(record.task_id, record.owner, answers)
            except TaskResultTooLargeError as exc:
                raise InvalidParamsError(f"Invalid params: inputResponses too large: {exc}"
                                         ) from None
        return {"resultType": "complete"}

    def cancel(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        surface = self._surface_of(ctx, "tasks/cancel")
        record = self._record(ctx, params)
        if surface == "v1" and record.terminal:
            raise MCPError(f"Cannot cancel task {record.task_id}: it is already "
                           f"{record.status}", code=INVALID_PARAMS)
        after = self.store.cancel(record.task_id, record.owner, "cancelled by the client")
        self.runner.cancel_local(record.task_id)
        if after is not None and after.surface == "v2" and after.version != record.version:
            self.publish(after)
        if surface == "v2":
            return {"resultType": "complete"}
        return v1_task(after or record)

    def result(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        """v1 ``tasks/result``: block until the task is terminal, then its result (with the
        related-task ``_meta``), or its error as this request's error."""
        self._surface_of(ctx, "tasks/result")
        record = self._record(ctx, params)
        while not record.terminal:
            if ctx.cancelled.is_set():
                raise RequestCancelledError("tasks/result was cancelled")
            later = self.store.wait(record.task_id, record.version, _RESULT_SLICE)
            if later is None:
                raise InvalidParamsError(f"Invalid params: unknown task {record.task_id!r}")
            record = later
        if record.result is not None:
            result = dict(record.result)
            result["_meta"] = {**dict(result.get("_meta") or {}), **related(record.task_id)}
            return result
        if record.status == "cancelled":
            raise MCPError(f"Task {record.task_id} was cancelled", code=INVALID_PARAMS,
                           data={RELATED_TASK: {"taskId": record.task_id}})
        error = record.error or {"code": -32603, "message": "the task failed"}
        raise MCPError(str(error.get("message")), code=int(error.get("code", -32603)),
                       data=error.get("data"))

    def list(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        self._surface_of(ctx, "tasks/list")
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidParamsError('Invalid params: "cursor" must be a string')
        try:
            records, next_cursor = self.store.list(owner_of(ctx), cursor,
                                                   self.server.limits.page_size)
        except ValueError:
            raise InvalidParamsError("Invalid params: unknown cursor") from None
        result: dict[str, Any] = {"tasks": [v1_task(r) for r in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result


def executor_of(tool: RegisteredTool) -> TaskExecutor | None:
    """The executor a tool named with ``executor=``, checked (``None``: the server's)."""
    options = task_tool(tool.options)
    executor = options.executor if options is not None else None
    if executor is None or isinstance(executor, TaskExecutor):
        return executor
    raise TypeError(f"tool {tool.name}: executor= must be a TaskExecutor (ThreadExecutor, "
                    f"CeleryExecutor), not {type(executor).__name__}")


def _scoped(server: ServerCore, body: Callable[[TaskContext], dict[str, Any]],
            ctx: TaskContext) -> dict[str, Any]:
    """``body(ctx)`` inside the server's request scopes, entered on the task's thread."""
    scopes = list(server._request_scopes)
    if not scopes:
        return body(ctx)
    with contextlib.ExitStack() as stack:
        for scope in scopes:
            stack.enter_context(scope(ctx))
        return body(ctx)


def _call_plain(server: ServerCore, params: dict[str, Any],
                ctx: HandlerContext) -> dict[str, Any]:
    return server.tools.call(ctx, params)


def _finish(tool: RegisteredTool, handoff: RunAsTask, ctx: HandlerContext) -> dict[str, Any]:
    """Run a handler's continuation and encode its value like the tool's own result."""
    try:
        value = handoff.fn(ctx, *handoff.args, **handoff.kwargs)
    except (MCPError, RequestCancelledError):
        raise
    except Exception as exc:  # mapped and logged as the tool's own failure would be
        return tool_failed(tool.name, exc, ctx=ctx)
    result: dict[str, Any] = tool.binding.encode(value)
    return result
