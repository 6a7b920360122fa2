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
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..dispatch.inbound import error_answer
from ..errors import INTERNAL_ERROR, MCPError, RequestCancelledError, StoreUnavailableError
from ..protocol.deadline import Deadline
from ..telemetry.instrumentation import Instrumentation
from .bounds import TaskResultTooLargeError
from .context import TaskContext
from .store import TaskRecord, TaskStore, runner_id

logger = logging.getLogger("mcpsync.tasks")

#: Tasks one server runs at once by default (each a thread).
DEFAULT_MAX_RUNNING = 64

#: Seconds a finished task's outcome is tried again while the store cannot be reached.
SETTLE_PATIENCE = 30.0
#: What "the store cannot be reached now" looks like from any store: Redis's error, an
#: OS-level failure, SQLite's "database is locked" past its busy timeout.
_UNREACHABLE = (StoreUnavailableError, OSError, sqlite3.OperationalError)

#: What runs as a task: given its context, returns a CallToolResult dict.
TaskBody = Callable[[TaskContext], dict[str, Any]]


def _failure(message: str, *, status: str = "failed") -> dict[str, Any]:
    return {"status": status, "status_message": message, "input_requests": None,
            "error": {"code": INTERNAL_ERROR, "message": message}}


def new_task_id() -> str:
    """An unguessable id: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


class TaskRunner:
    """Runs tasks for one server. Thread-safe."""

    def __init__(self, store: TaskStore, *, max_running: int = DEFAULT_MAX_RUNNING,
                 telemetry: Instrumentation | None = None) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.store = store
        self.max_running = max_running
        self._lock = threading.Lock()
        self._running: dict[str, tuple[threading.Thread, TaskContext]] = {}
        self._stop = threading.Event()
        #: Records each task's run as a span linked to the request that created it.
        self._telemetry = telemetry

    def _changed(self, record: TaskRecord | None, context: TaskContext | None = None) -> None:
        if record is None:
            return
        if context is not None:
            context.announce(record)

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
            telemetry = self._telemetry
            if telemetry is not None and telemetry.active:
                # The request's span is this thread's: the task's span links to it.
                body = telemetry.traced_task(body, tool, task_id)
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
        escaped: BaseException | None = None
        try:
            try:
                result = body(context)
            except RequestCancelledError:
                reason = "the server stopped" if stop.is_set() else "the task was cancelled"
                # A task already terminal (cancelled through the store) stays as it is.
                outcome = _failure(reason, status="failed" if stop.is_set() else "cancelled")
            except MCPError as exc:
                outcome = {"status": "failed", "error": exc.to_wire(),
                           "status_message": exc.message, "input_requests": None}
            except BaseException as exc:
                # Also an InputRequired that escaped (a question asked from a thread the
                # task does not know). Its text may hold secrets: the executor's one
                # mapping logs it and says only "Internal error", as for any request.
                answer = error_answer(task_id, exc, cancelled=False,
                                      method=f"task {task_id}")
                error = getattr(answer, "error", None) or {"code": INTERNAL_ERROR,
                                                          "message": "Internal error"}
                outcome = {"status": "failed", "error": error,
                           "status_message": f"the task failed: {error['message']}",
                           "input_requests": None}
                if not isinstance(exc, Exception):
                    escaped = exc
            else:
                failed = v1_failed_on_error and bool(result.get("isError"))
                outcome = {"status": "failed" if failed else "completed", "result": result,
                           "input_requests": None}
            self._changed(self._settle(task_id, outcome, stop), context)
        finally:
            self._forget(task_id)
        if escaped is not None:
            raise escaped

    def _settle(self, task_id: str, outcome: dict[str, Any],
                stop: threading.Event) -> TaskRecord | None:
        """Write a finished task's ``outcome``; the record after, or ``None`` when nothing
        could be written (logged: the record then stays as the store last had it, until its
        TTL).

        A store that cannot be reached now (Redis restarting, SQLite busy) is tried again,
        backing off from 0.1 s to 5 s, for :data:`SETTLE_PATIENCE` seconds or until the
        runner stops: a short outage does not lose a finished result. An outcome the store
        cannot hold (a result over its bound, a value it cannot encode) is replaced once by
        a failure that says so, never by the text of the store's error."""
        deadline = Deadline(SETTLE_PATIENCE, f"storing the outcome of task {task_id}")
        delay = 0.1
        replaced = False
        while True:
            try:
                return self.store.update(task_id, **outcome)
            except TaskResultTooLargeError as exc:
                if replaced:
                    raise
                outcome, replaced = _failure(f"the task's result is too large to keep: {exc}"), True
            except _UNREACHABLE as exc:
                if deadline.expired() or stop.wait(min(delay, deadline.remaining())):
                    logger.error("task %s: its outcome (%s) could not be stored: %s", task_id,
                                 outcome.get("status"), exc)
                    return None
                delay = min(delay * 2, 5.0)
            except Exception:
                if replaced:
                    logger.exception("task %s: not even its failure could be stored", task_id)
                    return None
                logger.exception("task %s: the store refused its outcome", task_id)
                outcome, replaced = _failure("the task's outcome could not be stored"), True

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
