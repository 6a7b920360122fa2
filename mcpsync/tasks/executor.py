"""Where a task's handler runs: the executor seam, and the thread executor (the default).

The runner (:mod:`.runner`) writes a task's record, then hands the task to an executor.
The store is the only meeting point between the request that created a task and the
place it runs, so an executor is free to run it anywhere that can reach the store:

* :class:`ThreadExecutor` (the default) runs it on a named thread of this process, with
  a context bound to the live session: a 2025-11-25 task may ask the client over it.
* :class:`mcpsync.celery.CeleryExecutor` queues it on a Celery broker; a Celery worker
  that imports the same server definition runs it (see docs/celery.md).

A task is described to an executor by a :class:`TaskLaunch`: what to run in this process
(``make_context`` and ``body``, closures over the request), and the same task as plain
JSON (``tool``, ``params``, ``info``) for an executor that runs it in another process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..errors import INTERNAL_ERROR, MCPError

if TYPE_CHECKING:
    from ..dispatch.ports import SessionInfo
    from .context import TaskContext

#: Tasks one server runs at once by default on its threads.
DEFAULT_MAX_RUNNING = 64

#: How the ``statusMessage`` of a task waiting for an executor's worker starts: a task whose
#: message says otherwise has started before (a redelivery keeps its progress).
QUEUED_PREFIX = "queued:"

#: What runs as a task: given its context, returns a CallToolResult dict.
TaskBody = Callable[["TaskContext"], dict[str, Any]]
#: The runner's part of running a task: the body, then its outcome written to the store.
Execute = Callable[["TaskContext", TaskBody, bool, threading.Event], None]


@dataclass(frozen=True)
class TaskLaunch:
    """One task, handed to an executor once its record is stored."""

    task_id: str
    #: The tool that runs (``tools/call``'s ``params.name``).
    tool: str
    surface: Literal["v1", "v2"]
    owner: str
    #: The ``tools/call`` params as the task sees them (without ``task``,
    #: ``inputResponses``, ``requestState``): JSON, so another process can run the call.
    params: dict[str, Any]
    #: The client as the creating request saw it.
    info: SessionInfo
    #: The transport facts another process may know: ``kind``, ``remote_addr``,
    #: ``session_id`` (never headers: they may hold credentials).
    transport: dict[str, Any]
    #: A v1 task whose tool reports ``isError`` ends ``failed``.
    v1_failed_on_error: bool
    #: The tool said it may safely run twice (``@server.tool(..., retry_safe=True)``).
    retry_safe: bool
    #: For this process only: the task's context, given the executor's stop flag.
    make_context: Callable[[threading.Event], TaskContext]
    #: For this process only: what runs (the tool call, in the server's request scopes).
    body: TaskBody
    #: Whether ``tool`` and ``params`` alone say what runs. False for the continuation of
    #: a ``RunAsTask`` hand-off, a Python closure only this process holds.
    portable: bool = True


class RemoteTasks(Protocol):
    """What an executor that runs tasks in another process is bound to: the server's
    tasks extension (:class:`mcpsync.tasks.Tasks`), on the web side and on the worker."""

    def payload(self, launch: TaskLaunch) -> dict[str, Any]:
        """``launch`` as the signed JSON message another process runs (raises
        :class:`~mcpsync.errors.MCPError` when this server has no key to share)."""
        ...

    def run_payload(self, data: dict[str, Any]) -> str:
        """Run the task a message describes, here (see :mod:`mcpsync.tasks.remote`)."""
        ...


@runtime_checkable
class TaskExecutor(Protocol):
    """Where tasks run. An implementation must be thread-safe."""

    #: The ``statusMessage`` of a task accepted but not started yet (``None`` for an
    #: executor that starts every task at once).
    @property
    def queued_message(self) -> str | None: ...

    def bind(self, tasks: RemoteTasks) -> None:
        """Learn how to describe a task to another process and run one queued elsewhere
        (``tasks``: the server's tasks extension), for an executor whose workers run tasks
        in another process. Called when the server's tasks extension is installed."""
        ...

    def admit(self) -> None:
        """Refuse (:class:`~mcpsync.errors.MCPError`, -32603) when no more tasks fit, before
        any record is written; else hold a place until :meth:`submit` or :meth:`release`."""
        ...

    def release(self) -> None:
        """Give back the place :meth:`admit` held: the record could not be written."""
        ...

    def submit(self, launch: TaskLaunch, execute: Execute) -> None:
        """Run ``launch`` (its record is stored): here with ``execute``, or elsewhere.
        Raises :class:`~mcpsync.errors.MCPError` when the task cannot be handed on; the
        runner then marks it failed."""
        ...

    def running(self) -> int:
        """Tasks running in this process now."""
        ...

    def cancel_local(self, task_id: str) -> None:
        """Wake the task at once if it runs here (``tasks/cancel`` was written to the store,
        which every other place notices on its own)."""
        ...

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the tasks running here; False if some still ran after ``timeout``."""
        ...


class ThreadExecutor:
    """Runs each task on a named thread of this process (``mcpsync-task-<id prefix>``),
    at most ``max_running`` at once: past that a task is refused at once (-32603, "too
    many tasks running"), before any record is written, rather than queued behind hours of
    work. Thread-safe."""

    queued_message: str | None = None

    def __init__(self, max_running: int = DEFAULT_MAX_RUNNING) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.max_running = max_running
        self._lock = threading.Lock()
        self._held = 0  # places admitted, not yet submitted
        self._running: dict[str, tuple[threading.Thread, TaskContext]] = {}
        self._stop = threading.Event()

    def bind(self, tasks: RemoteTasks) -> None:
        """Nothing to learn: a thread runs the closures it is handed."""

    def admit(self) -> None:
        with self._lock:
            if self._stop.is_set():
                raise MCPError("the server is shutting down: no new tasks", code=INTERNAL_ERROR)
            if len(self._running) + self._held >= self.max_running:
                raise MCPError(f"too many tasks running ({self.max_running}); try again later",
                               code=INTERNAL_ERROR)
            self._held += 1

    def release(self) -> None:
        with self._lock:
            self._held = max(0, self._held - 1)

    def submit(self, launch: TaskLaunch, execute: Execute) -> None:
        with self._lock:
            stop = self._stop
        context = launch.make_context(stop)
        task_id = launch.task_id

        def run() -> None:
            try:
                execute(context, launch.body, launch.v1_failed_on_error, stop)
            finally:
                with self._lock:
                    self._running.pop(task_id, None)

        thread = threading.Thread(target=run, name=f"mcpsync-task-{task_id[:8]}", daemon=True)
        with self._lock:
            self._held = max(0, self._held - 1)
            self._running[task_id] = (thread, context)
        thread.start()

    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def cancel_local(self, task_id: str) -> None:
        with self._lock:
            entry = self._running.get(task_id)
        if entry is not None:
            entry[1].cancelled.set()

    def close(self, timeout: float = 5.0) -> bool:
        """Stop every running task (their ``check_cancelled``/``sleep`` raise; each is
        marked ``failed``: "the server stopped") and join their threads for up to
        ``timeout`` seconds in all. False if some were still running then. Idempotent.

        New tasks are refused while it runs; afterwards the executor takes tasks again (a
        server may be stopped and served again), under a fresh stop flag: a task that
        outlived ``timeout`` still sees its own flag set."""
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

    def __repr__(self) -> str:
        return f"<ThreadExecutor max_running={self.max_running}>"
