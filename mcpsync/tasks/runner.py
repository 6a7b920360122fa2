"""The task runner: writes the record, then runs the handler on a background thread.

Order matters: the record is created (durably, for a durable store) *before* the
``CreateTaskResult`` leaves, so a ``tasks/get`` sent the moment the client reads it, to
any worker sharing the store, finds the task.

Each running task has its own named thread (``mcpsync-task-<id prefix>``). Their number
is capped by ``max_running`` per runner (one runner per :class:`~mcpsync.Server`, so per
process): a task asked for past the cap is refused at once with a JSON-RPC error
(-32603, "too many tasks running"), before any record is written, rather than queued
behind hours of work. :meth:`TaskRunner.close` stops them cooperatively (their
``check_cancelled`` / ``sleep`` raise) and joins them.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..errors import INTERNAL_ERROR, MCPError, RequestCancelledError
from .bounds import TaskResultTooLargeError
from .context import TaskContext
from .store import TaskRecord, TaskStore, runner_id

logger = logging.getLogger("mcpsync.tasks")

#: Tasks one server runs at once by default (each a thread).
DEFAULT_MAX_RUNNING = 64

#: What runs as a task: given its context, returns a CallToolResult dict.
TaskBody = Callable[[TaskContext], dict[str, Any]]
#: Called after every status change (status notifications); never with a lock held.
StatusListener = Callable[[TaskRecord], None]


def new_task_id() -> str:
    """An unguessable id: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


class TaskRunner:
    """Runs tasks for one server. Thread-safe."""

    def __init__(self, store: TaskStore, *, max_running: int = DEFAULT_MAX_RUNNING) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.store = store
        self.max_running = max_running
        self._lock = threading.Lock()
        self._running: dict[str, tuple[threading.Thread, TaskContext]] = {}
        self._stop = threading.Event()
        self._listeners: list[StatusListener] = []

    def add_listener(self, listener: StatusListener) -> None:
        """Call ``listener(record)`` after each status change of a task this runner runs."""
        with self._lock:
            self._listeners.append(listener)

    def _changed(self, record: TaskRecord | None, context: TaskContext | None = None) -> None:
        if record is None:
            return
        if context is not None:
            context.announce(record)
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(record)
            except Exception:
                logger.exception("task status listener failed")

    def start(
        self,
        *,
        owner: str,
        surface: Literal["v1", "v2"],
        tool: str,
        ttl_ms: int | None,
        poll_interval_ms: int | None,
        make_context: Callable[[str, threading.Event], TaskContext],
        body: TaskBody,
        v1_failed_on_error: bool,
    ) -> TaskRecord:
        """Create the task's record, then start ``body`` on its own thread; the record.

        Raises :class:`MCPError` (-32603) when ``max_running`` tasks already run, or the
        store refuses the task (:class:`~mcpsync.tasks.store.TaskStoreFullError`).
        """
        from .store import TaskStoreFullError

        with self._lock:
            if self._stop.is_set():
                raise MCPError("the server is shutting down: no new tasks", code=INTERNAL_ERROR)
            if len(self._running) >= self.max_running:
                raise MCPError(f"too many tasks running ({self.max_running}); try again later",
                               code=INTERNAL_ERROR)
            task_id = new_task_id()
            stop = self._stop
            context = make_context(task_id, stop)
            thread = threading.Thread(
                target=self._run, args=(context, body, v1_failed_on_error, stop),
                name=f"mcpsync-task-{task_id[:8]}", daemon=True)
            self._running[task_id] = (thread, context)
        record = TaskRecord(task_id=task_id, owner=owner, surface=surface, tool=tool,
                            ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms, runner=runner_id())
        try:
            self.store.create(record)
        except TaskStoreFullError as exc:
            self._forget(task_id)
            raise MCPError(f"too many tasks: {exc}", code=INTERNAL_ERROR) from None
        except BaseException:
            self._forget(task_id)
            raise
        thread.start()
        return record

    def _forget(self, task_id: str) -> None:
        with self._lock:
            self._running.pop(task_id, None)

    def cancel_local(self, task_id: str) -> None:
        """Wake a task running here at once after ``tasks/cancel`` marked it cancelled
        (another worker's task notices through the store)."""
        with self._lock:
            entry = self._running.get(task_id)
        if entry is not None:
            entry[1].cancelled.set()

    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def _run(self, context: TaskContext, body: TaskBody, v1_failed_on_error: bool,
             stop: threading.Event) -> None:
        task_id = context.task_id
        try:
            try:
                result = body(context)
            except RequestCancelledError:
                record = self.store.get(task_id)
                if record is not None and not record.terminal:
                    reason = ("the server stopped" if stop.is_set()
                              else "the task was cancelled")
                    record = self.store.update(
                        task_id, status="failed" if stop.is_set() else "cancelled",
                        status_message=reason,
                        error={"code": INTERNAL_ERROR, "message": reason},
                        input_requests=None)
                self._changed(record, context)
                return
            except MCPError as exc:
                record = self.store.update(task_id, status="failed", error=exc.to_wire(),
                                           status_message=exc.message, input_requests=None)
                self._changed(record, context)
                return
            except BaseException as exc:
                # Also an InputRequired that escaped (a question asked from a thread the
                # task does not know): the task fails, the worker thread survives.
                logger.exception("task %s failed", task_id)
                message = f"the task failed: {type(exc).__name__}: {exc}"
                record = self.store.update(
                    task_id, status="failed", status_message=message,
                    error={"code": INTERNAL_ERROR, "message": message}, input_requests=None)
                self._changed(record, context)
                if not isinstance(exc, Exception):
                    raise
                return
            failed = v1_failed_on_error and bool(result.get("isError"))
            try:
                record = self.store.update(task_id, status="failed" if failed else "completed",
                                           result=result, input_requests=None)
            except TaskResultTooLargeError as exc:
                message = f"the task's result is too large to keep: {exc}"
                record = self.store.update(
                    task_id, status="failed", status_message=message, input_requests=None,
                    error={"code": INTERNAL_ERROR, "message": message})
            self._changed(record, context)
        finally:
            self._forget(task_id)

    def close(self, timeout: float = 5.0) -> bool:
        """Stop every running task (their ``check_cancelled``/``sleep`` raise; each is
        marked ``failed``: "the server stopped") and join their threads for up to
        ``timeout`` seconds in all. False if some were still running then. Idempotent.

        New tasks are refused while it runs; afterwards the runner takes tasks again (a
        server may be stopped and served again), under a fresh stop flag: a task that
        outlived ``timeout`` still sees its own flag set."""
        import time

        with self._lock:
            stop = self._stop
            stop.set()
            entries = list(self._running.values())
        for _, context in entries:
            context.cancelled.set()
        deadline = time.monotonic() + timeout
        for thread, _ in entries:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            if self._stop is stop:
                self._stop = threading.Event()
        return all(not thread.is_alive() for thread, _ in entries)
