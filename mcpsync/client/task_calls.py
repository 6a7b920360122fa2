"""How a Client makes a ``tools/call`` and starts, follows and re-attaches tasks (the logic
behind ``call_tool``, ``start_task`` and ``task``; :mod:`mcpsync.client.tasks` holds the
handle itself).

``Client`` keeps one :class:`ClientTasks` and delegates to it, so that the client module
stays about the connection. The surface (v1 or v2) is decided from the server's
capabilities once the connection is set up, never per call:

* **v2**, the extension ``io.modelcontextprotocol/tasks`` (SEP-2663): a client declares it
  among its capabilities' ``extensions`` (:func:`with_extension`, which the handshake in
  :mod:`.negotiate` uses too); a server advertises it the same way.
* **v1**, the frozen 2025-11-25 surface: a server declares task-augmented ``tools/call``
  (``capabilities.tasks.requests.tools.call``), in the handshake era only.

Which surface a server speaks (:func:`surface_of`), the ``tools/call`` params
(:func:`tool_call`) and whether an answer created a task (:func:`created_task`) live here,
not in :mod:`.tasks`, because every plain ``call_tool`` needs them: a call that creates no
task never runs code of the task handle's module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..codec import from_wire
from ..errors import ProtocolStateError
from ..types import CallToolResult
from .task_inputs import Answer, Request
from .task_support import ToolTaskSupport, Watchers
from .tasks import Listen, Surface, TaskHandle, TaskPorts, TaskState, run_to_result

#: The extension id a v2 client declares and a v2 server advertises.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"


def surface_of(capabilities: Mapping[str, Any], modern: bool) -> Surface | None:
    """Which task surface a server with ``capabilities`` speaks: ``"v2"`` when it advertises
    the extension, ``"v1"`` when it declares task-augmented ``tools/call`` (2025-11-25's
    ``capabilities.tasks.requests.tools.call``, handshake era only), else ``None``."""
    extensions = capabilities.get("extensions")
    if isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict):
        return "v2"
    tasks = capabilities.get("tasks")
    if not modern and isinstance(tasks, dict):
        requests = tasks.get("requests")
        tools = requests.get("tools") if isinstance(requests, dict) else None
        if isinstance(tools, dict) and isinstance(tools.get("call"), dict):
            return "v1"
    return None


def with_extension(capabilities: dict[str, Any]) -> dict[str, Any]:
    """``capabilities`` plus the tasks extension (a copy; other extensions are kept)."""
    extensions = capabilities.get("extensions")
    merged = dict(extensions) if isinstance(extensions, dict) else {}
    merged.setdefault(TASKS_EXTENSION, {})
    return {**capabilities, "extensions": merged}


def tool_call(name: str, arguments: Mapping[str, Any] | None,
              meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """``tools/call``: ``arguments`` when given (even empty), ``_meta`` when not empty."""
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    if meta:
        params["_meta"] = dict(meta)
    return params


def created_task(raw: dict[str, Any], asked_v1: bool) -> TaskState | None:
    """The task a ``tools/call`` answer created, or None when it is a plain result: v2's
    ``resultType: "task"`` (followed even from a server that did not advertise the
    extension: the client declared it, and dropping the task would lose the call), or
    v1's ``{task: {...}}`` when the call asked for one."""
    if raw.get("resultType") == "task":
        return TaskState.from_wire(raw, "v2")
    if asked_v1:
        task = raw.get("task")
        if isinstance(task, dict):
            return TaskState.from_wire(task, "v1")
    return None


def surface_of_created(raw: dict[str, Any]) -> Surface:
    """Which surface made the task :func:`created_task` found in ``raw``."""
    return "v2" if raw.get("resultType") == "task" else "v1"


class ClientTasks:
    """One client's task machinery. Thread-safe (its state is the bounded tool map and the
    watchers, both locked)."""

    def __init__(self, *, request: Request, answer: Answer,
                 capabilities: Callable[[], tuple[Mapping[str, Any], bool]],
                 list_tools: Callable[[], object], request_timeout: Callable[[], float],
                 listen: Listen | None = None) -> None:
        self._request = request
        self._listen = listen
        self._answer = answer
        self._capabilities = capabilities
        self._list_tools = list_tools
        self._request_timeout = request_timeout
        self.support = ToolTaskSupport()
        self.watchers = Watchers()

    @property
    def surface(self) -> Surface | None:
        """``"v2"``, ``"v1"`` or None (the server offers no tasks)."""
        capabilities, modern = self._capabilities()
        return surface_of(capabilities, modern)

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        self.watchers.on_notification(method, params)
        self.support.on_notification(method, params)

    def _ports(self, surface: Surface) -> TaskPorts:
        return TaskPorts(surface, self._request, self._answer, self.watchers,
                         self._request_timeout(), self._listen if self._modern() else None)

    def _modern(self) -> bool:
        return self._capabilities()[1]

    # -- call_tool --------------------------------------------------------------------

    def prepare_call(self, name: str, params: dict[str, Any]) -> bool:
        """v1: add ``params.task`` when the tool requires a task (learning that from
        ``tools/list`` on first use). True when the call asks for a task."""
        if self.surface != "v1" or "task" in params:
            return "task" in params
        support = self.support.get(name)
        if support is None and not self.support.listed:
            self._list_tools()
            support = self.support.get(name)
        if support == "required":
            params["task"] = {}
            return True
        return False

    def converter(self, asked_v1: bool,
                  timeout: float | None) -> Callable[[dict[str, Any]], CallToolResult]:
        """The ``tools/call`` answer as a result: a plain one converted, a task followed to
        its end (cancelled on the server when the wait gives up)."""
        deadline = time.monotonic() + (self._request_timeout() if timeout is None
                                       else timeout)

        def convert(raw: dict[str, Any]) -> CallToolResult:
            state = created_task(raw, asked_v1)
            if state is None:
                return from_wire(CallToolResult, raw)
            handle = TaskHandle(self._ports(surface_of_created(raw)), state)
            return run_to_result(handle, max(0.0, deadline - time.monotonic()))

        return convert

    # -- explicit ---------------------------------------------------------------------

    def start_params(self, name: str, arguments: Mapping[str, Any] | None,
                     ttl: float | None, meta: Mapping[str, Any] | None) -> dict[str, Any]:
        """The ``tools/call`` params of :meth:`Client.start_task`."""
        surface = self._require()
        params = tool_call(name, arguments, meta)
        if surface == "v1":
            params["task"] = {} if ttl is None else {"ttl": int(ttl * 1000)}
        return params

    def started(self, raw: dict[str, Any]) -> TaskHandle:
        """The handle for a ``tools/call`` made by :meth:`Client.start_task`."""
        surface = self._require()
        state = created_task(raw, surface == "v1")
        if state is not None:
            return TaskHandle(self._ports(surface_of_created(raw)), state)
        # The server answered at once (v2 may; a v1 server that ignored params.task).
        result = from_wire(CallToolResult, raw)
        done = TaskState(task_id="", status="completed", raw=raw)
        return TaskHandle(self._ports(surface), done, result=result)

    def attach(self, task_id: str, timeout: float | None) -> TaskHandle:
        """A handle for an existing task (one ``tasks/get`` checks it exists: a task that
        is unknown, expired or someone else's raises the server's error, -32602)."""
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("task_id must be a non-empty string")
        handle = TaskHandle(self._ports(self._require()), None, task_id=task_id)
        handle.status(timeout=timeout)
        return handle

    def _require(self) -> Surface:
        surface = self.surface
        if surface is None:
            raise ProtocolStateError(
                "the server offers no tasks (neither the io.modelcontextprotocol/tasks "
                "extension nor the 2025-11-25 tasks capability for tools/call)")
        return surface


__all__ = ["TASKS_EXTENSION", "ClientTasks", "created_task", "surface_of", "surface_of_created",
           "tool_call", "with_extension"]
