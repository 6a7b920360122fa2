"""The context a tool handler gets when it runs as a task.

A task outlives the request that created it, so its context cannot be that request's: it
is the one context type (:class:`~mcpsync.dispatch.context.HandlerContext`), detached
(:class:`~mcpsync.dispatch.context.DetachedContext`), on the task store's port pair
(:mod:`.ports`). The handler is the same plain blocking function either way; what changes
underneath:

* **Cancellation** comes from the store: ``tasks/cancel`` may be served by another worker
  process, so the runner cannot rely on an in-memory flag alone. ``check_cancelled`` reads
  the record (at most every 100 ms), ``sleep`` waits on the store's change signal.
* **Questions** (``elicit``, ``sample``, ``list_roots``, ``ask_all``): on the v2 surface
  they become the task's ``inputRequests`` (status ``input_required``) and block until
  ``tasks/update`` delivers the answers; on the v1 surface they are real requests to the
  client over the session, tagged with the related-task ``_meta`` (status
  ``input_required`` while they wait).
* **Progress and logs** go to the session's own channel when there is one (stdio, a
  handshake-era session); a progress message is also the task's ``statusMessage``, which
  every surface shows on ``tasks/get``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..dispatch.context import DetachedContext, server_of
from ..dispatch.ports import SessionHandle, SessionInfo
from ..stores.tasks import TaskRecord, TaskStore
from .ports import TaskLifetime, TaskOutlet

if TYPE_CHECKING:
    from ..dispatch.inbound import TransportContext


class _TaskRequest:
    """What a task's context serves: the task (its id stands for the request's, which is
    long answered), the tool's method and the call's params."""

    __slots__ = ("id", "method", "params")

    def __init__(self, task_id: str, method: str, params: dict[str, Any]) -> None:
        self.id = task_id
        self.method = method
        self.params = params


class TaskContext(DetachedContext):
    """What a handler running as a task may know and do. Thread-safe.

    Declared like any context (a parameter annotated ``HandlerContext``): the handler is
    the one a plain call runs, so it uses the same methods. ``request_id`` is the task id;
    ``detach()`` is the context itself (it already outlives the request that started it).
    """

    def __init__(
        self,
        *,
        task_id: str,
        surface: str,
        store: TaskStore,
        session: SessionHandle,
        info: SessionInfo,
        transport: TransportContext,
        method: str,
        params: dict[str, Any],
        channel_usable: bool,
        stop: threading.Event,
        request_timeout: float,
        publish: Callable[[TaskRecord], None] | None = None,
    ) -> None:
        self.task_id = task_id
        #: ``"v1"`` or ``"v2"``: which task surface created this task.
        self.surface = surface
        self._info = info
        lifetime = TaskLifetime(store, task_id, stop)
        self._task_outlet = TaskOutlet(
            lifetime, task_id=task_id, surface=surface, store=store, session=session,
            channel_usable=channel_usable, request_timeout=request_timeout, publish=publish)
        self._setup(_TaskRequest(task_id, method, params), session, self._task_outlet,
                    lifetime, transport, params.get("_meta"))

    @property
    def session(self) -> SessionInfo:
        """The client as the request that created the task saw it."""
        return self._info

    @property
    def server(self) -> Any:
        """The :class:`~mcpsync.Server` running the task."""
        return server_of(self._session)

    def announce(self, record: TaskRecord | None) -> None:
        """Tell the client its task's new status: v1, ``notifications/tasks/status`` on
        the session that created it; v2, ``notifications/tasks`` on the listens following
        the task. Both are optional: a client that misses one polls."""
        self._task_outlet.announce(record)
