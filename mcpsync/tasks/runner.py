"""The task runner: writes the record, then hands the task to its executor.

Order matters: the record is created (durably, for a durable store) *before* the
``CreateTaskResult`` leaves, so a ``tasks/get`` sent the moment the client reads it, to
any worker sharing the store, finds the task. Where the task then runs is the executor's
business (:mod:`.executor`): a thread of this process by default, a Celery worker with
:class:`mcpsync.celery.CeleryExecutor`. Wherever it runs, :meth:`TaskRunner.execute` runs
its body and writes its outcome, so a task fails the same way on every executor.

A task asked for when its executor has no room (``max_running`` threads busy, a broker
queue at its bound) is refused at once with a JSON-RPC error (-32603), before any record
is written, rather than queued behind hours of work. :meth:`TaskRunner.close` stops the
tasks running in this process cooperatively (their ``check_cancelled`` / ``sleep`` raise)
and joins them.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..dispatch.inbound import error_answer
from ..dispatch.ports import SessionInfo
from ..errors import INTERNAL_ERROR, MCPError, RequestCancelledError, StoreUnavailableError
from ..protocol.deadline import Deadline
from ..stores.tasks import TaskRecord, TaskStore, runner_id
from ..telemetry.instrumentation import Instrumentation
from .bounds import TaskResultTooLargeError
from .context import TaskContext
from .executor import DEFAULT_MAX_RUNNING, TaskBody, TaskExecutor, TaskLaunch, ThreadExecutor

logger = logging.getLogger("mcpsync.tasks")

__all__ = ["DEFAULT_MAX_RUNNING", "SETTLE_PATIENCE", "TaskBody", "TaskRunner", "new_task_id"]

#: Seconds a finished task's outcome is tried again while the store cannot be reached.
SETTLE_PATIENCE = 30.0
#: What "the store cannot be reached now" looks like from any store: Redis's error, an
#: OS-level failure, SQLite's "database is locked" past its busy timeout.
_UNREACHABLE = (StoreUnavailableError, OSError, sqlite3.OperationalError)


def _failure(message: str, *, status: str = "failed") -> dict[str, Any]:
    return {"status": status, "status_message": message, "input_requests": None,
            "error": {"code": INTERNAL_ERROR, "message": message}}


def new_task_id() -> str:
    """An unguessable id: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


class TaskRunner:
    """Starts and finishes tasks for one server. Thread-safe.

    ``executor``: where tasks run unless their tool names another (a
    :class:`~mcpsync.tasks.executor.ThreadExecutor` of ``max_running`` threads by
    default). Tasks that only this process can run (a ``RunAsTask`` continuation) always
    run on :attr:`threads`.
    """

    def __init__(self, store: TaskStore, *, max_running: int = DEFAULT_MAX_RUNNING,
                 executor: TaskExecutor | None = None,
                 telemetry: Instrumentation | None = None) -> None:
        self.store = store
        #: This process's threads: the default executor, and the one for tasks that cannot
        #: leave this process.
        self.threads = ThreadExecutor(max_running)
        self.executor: TaskExecutor = self.threads if executor is None else executor
        #: Records each task's run as a span linked to the request that created it.
        self._telemetry = telemetry

    @property
    def max_running(self) -> int:
        return self.threads.max_running

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
        params: dict[str, Any] | None = None,
        info: SessionInfo | None = None,
        transport: dict[str, Any] | None = None,
        executor: TaskExecutor | None = None,
        retry_safe: bool = False,
        portable: bool = True,
    ) -> TaskRecord:
        """Create the task's record, then hand it to its executor (``executor``, else the
        runner's; :attr:`threads` when it is not ``portable``); the record.

        Raises :class:`MCPError` (-32603) when the executor has no room, the store refuses
        the task (:class:`~mcpsync.stores.tasks.TaskStoreFullError`), or the executor could
        not take it (the record is then marked failed).
        """
        from ..stores.tasks import TaskStoreFullError

        chosen = self.threads if not portable else (executor or self.executor)
        chosen.admit()
        task_id = new_task_id()
        telemetry = self._telemetry
        if telemetry is not None and telemetry.active:
            # The request's span is this thread's: the task's span links to it.
            body = telemetry.traced_task(body, tool, task_id)
        record = TaskRecord(task_id=task_id, owner=owner, surface=surface, tool=tool,
                            ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms,
                            status_message=chosen.queued_message,
                            # A queued task has no runner until a worker claims it.
                            runner=runner_id() if chosen is self.threads else "")
        try:
            self.store.create(record)
        except TaskStoreFullError as exc:
            chosen.release()
            raise MCPError(f"too many tasks: {exc}", code=INTERNAL_ERROR) from None
        except BaseException:
            chosen.release()
            raise
        launch = TaskLaunch(
            task_id=task_id, tool=tool, surface=surface, owner=owner, params=params or {},
            info=info or SessionInfo(), transport=transport or {},
            v1_failed_on_error=v1_failed_on_error, retry_safe=retry_safe,
            make_context=lambda stop: make_context(task_id, stop), body=body,
            portable=portable)
        try:
            chosen.submit(launch, self.execute)
        except BaseException as exc:
            message = exc.message if isinstance(exc, MCPError) else "the task could not be started"
            if not isinstance(exc, MCPError):
                logger.exception("task %s: its executor refused it", task_id)
            self.store.update(task_id, **_failure(message))
            if isinstance(exc, MCPError):
                raise
            raise MCPError(message, code=INTERNAL_ERROR) from None
        return record

    def cancel_local(self, task_id: str) -> None:
        """Wake a task running here at once after ``tasks/cancel`` marked it cancelled
        (another worker's task notices through the store)."""
        self.threads.cancel_local(task_id)
        if self.executor is not self.threads:
            self.executor.cancel_local(task_id)

    def running(self) -> int:
        """Tasks running in this process now."""
        count = self.threads.running()
        if self.executor is not self.threads:
            count += self.executor.running()
        return count

    def execute(self, context: TaskContext, body: TaskBody, v1_failed_on_error: bool,
                stop: threading.Event) -> None:
        """Run ``body`` on this thread and write its outcome: what every executor does
        where the task runs (a task's thread here, a Celery worker's), so a task ends
        the same way on each."""
        task_id = context.task_id
        escaped: BaseException | None = None
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
            # Also an InputRequired that escaped (a question asked from a thread the task
            # does not know). Its text may hold secrets: the executor's one mapping logs it
            # and says only "Internal error", as for any request.
            answer = error_answer(task_id, exc, cancelled=False, method=f"task {task_id}")
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
        """Stop the tasks running in this process (each ends ``failed``: "the server
        stopped") and join them for up to ``timeout`` seconds in all; False if some still
        ran then. Tasks queued elsewhere are not touched. Idempotent."""
        closed = self.threads.close(timeout)
        if self.executor is not self.threads:
            closed = self.executor.close(timeout) and closed
        return closed
