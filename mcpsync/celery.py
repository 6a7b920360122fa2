"""Tasks on Celery: :class:`CeleryExecutor` (extra ``celery``).

A task's handler runs on the Celery worker fleet a Flask or Django team already operates
instead of on a thread of the web worker that accepted ``tools/call``. One module builds
the Celery app, the server and its tools; gunicorn serves it and Celery's workers import
it::

    # myproject/mcp.py
    celery_app = Celery("myproject", broker="redis://localhost:6379/0")
    server = Server("myproject", task_store=RedisTaskStore("redis://localhost:6379/1"),
                    task_executor=CeleryExecutor(celery_app))
    wsgi = server.wsgi_app(path="/mcp")

    $ gunicorn myproject.mcp:wsgi
    $ celery -A myproject.mcp:celery_app worker

The task store is the one meeting point (status, progress messages, cancellation, input
requests and answers, results), exactly as with threads, so ``tasks/get``,
``tasks/cancel``, ``tasks/update`` and ``tasks/result`` work on any web worker. The broker
carries only what a worker needs to start a task (see :func:`mcpsync.tasks.remote.payload`:
no headers, no tokens), signed with the server's ``request_state_key`` (which web and
worker processes must share); a worker runs nothing whose signature or record disagrees.
What a task run on Celery can and cannot do, and what happens on each failure, is in
docs/celery.md.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Final

from celery import Celery
from kombu.exceptions import ChannelError, KombuError, OperationalError

from .errors import INTERNAL_ERROR, MCPError, StoreUnavailableError
from .tasks.executor import QUEUED_PREFIX, Execute, RemoteTasks, TaskLaunch

__all__ = ["QUEUED_MESSAGE", "CeleryExecutor"]

log = logging.getLogger("mcpsync.celery")

#: The ``statusMessage`` of a task accepted and waiting for a Celery worker.
QUEUED_MESSAGE: Final = f"{QUEUED_PREFIX} waiting for a Celery worker"
#: Seconds a store the worker cannot reach is waited for before the delivery is retried.
_STORE_RETRY_SECONDS: Final = 2.0
#: Times a delivery that found the store unreachable is retried (about a minute).
_STORE_RETRIES: Final = 30


class CeleryExecutor:
    """Runs tasks on Celery workers. Thread-safe.

    ``app``: the Celery app (its broker carries the tasks; no result backend is needed:
    the task store holds the results). ``queue``: the Celery queue (the app's default
    queue when ``None``). ``max_queued``: tasks waiting in that queue past which a new
    task is refused at once with a clear error (-32603), before any record is written
    (``None``: no bound but the broker's). ``publish_timeout``: seconds a ``tools/call``
    may spend handing its task to the broker, retries included; past it the call fails
    and the task is marked failed. ``name``: the Celery task name (two executors on one
    app need two names).

    Registers two Celery tasks on ``app``: ``<name>`` (acknowledged late, never delivered
    again after its worker is lost) and ``<name>.retry_safe`` (delivered again when its
    worker process is lost: ``reject_on_worker_lost``), for tools registered with
    ``retry_safe=True``.
    """

    queued_message: str | None = QUEUED_MESSAGE

    def __init__(self, app: Celery, *, queue: str | None = None, max_queued: int | None = None,
                 publish_timeout: float = 10.0, name: str = "mcpsync.run_task") -> None:
        if max_queued is not None and max_queued < 1:
            raise ValueError("max_queued must be at least 1 (or None)")
        if publish_timeout <= 0:
            raise ValueError("publish_timeout must be positive")
        self.app = app
        self.queue = queue
        self.max_queued = max_queued
        self.publish_timeout = publish_timeout
        self.name = name
        self._lock = threading.Lock()
        self._tasks: RemoteTasks | None = None

        def deliver(task: Any, data: dict[str, Any]) -> str:  # Celery binds ``task`` first
            return self._deliver(task, data)

        self._once = app.task(name=name, bind=True, acks_late=True,
                              reject_on_worker_lost=False, ignore_result=True)(deliver)
        self._retry_safe = app.task(name=f"{name}.retry_safe", bind=True, acks_late=True,
                                    reject_on_worker_lost=True, ignore_result=True)(deliver)

    # -- the worker side --------------------------------------------------------------------

    def bind(self, tasks: RemoteTasks) -> None:
        with self._lock:
            if self._tasks is not None and self._tasks is not tasks:
                raise ValueError("a CeleryExecutor serves one server: make one per server "
                                 "(with its own name=)")
            self._tasks = tasks

    def _bound(self) -> RemoteTasks:
        with self._lock:
            tasks = self._tasks
        if tasks is None:
            raise RuntimeError(f"{self.name}: no mcpsync server uses this executor in this "
                               "process (the module Celery imports must build the server)")
        return tasks

    def _deliver(self, task: Any, data: Any) -> str:
        """The Celery task: run the mcpsync task ``data`` describes, here (once its
        signature and its record agree: :mod:`mcpsync.tasks.remote`)."""
        tasks = self._bound()
        if not isinstance(data, dict):
            log.warning("%s: a message that is not an object was refused", self.name)
            return "refused"
        try:
            return tasks.run_payload(data)
        except (StoreUnavailableError, OSError) as exc:
            # Nothing ran yet, or the outcome could not be written: try the delivery again
            # once the store is back (claiming is idempotent; a finished task is skipped).
            log.warning("task %s: the task store is unreachable (%s); retrying",
                        data.get("task_id"), type(exc).__name__)
            raise task.retry(exc=exc, countdown=_STORE_RETRY_SECONDS,
                             max_retries=_STORE_RETRIES) from None

    # -- the web side -----------------------------------------------------------------------

    @property
    def queue_name(self) -> str:
        return self.queue or str(self.app.conf.task_default_queue)

    def _connection(self) -> Any:
        # Every broker wait is a part of publish_timeout: a connect and each socket read
        # get a third of it (a publish is tried at most three times).
        part = self.publish_timeout / 3
        return self.app.connection_for_write(
            connect_timeout=part,
            transport_options={"socket_timeout": part, "socket_connect_timeout": part,
                               "max_retries": 0})

    def queued(self) -> int:
        """Tasks waiting in this executor's queue now (as the broker counts them)."""
        with self._connection() as connection:
            try:
                declared = connection.default_channel.queue_declare(queue=self.queue_name,
                                                                    passive=True)
            except ChannelError:
                return 0  # no worker declared the queue yet: nothing waits in it
            return int(declared.message_count)

    def admit(self) -> None:
        if self.max_queued is None:
            return
        try:
            waiting = self.queued()
        except (KombuError, OSError) as exc:
            raise MCPError(f"the task queue cannot be reached ({type(exc).__name__}); try "
                           "again later", code=INTERNAL_ERROR) from None
        if waiting >= self.max_queued:
            raise MCPError(f"too many tasks queued ({waiting}, the bound is "
                           f"{self.max_queued}); try again later", code=INTERNAL_ERROR)

    def release(self) -> None:
        """Nothing held: the bound is the broker's count."""

    def submit(self, launch: TaskLaunch, execute: Execute) -> None:
        task = self._retry_safe if launch.retry_safe else self._once
        message = self._bound().payload(launch)  # signed; MCPError without a shared key
        part = self.publish_timeout / 3
        try:
            with self._connection() as connection:
                task.apply_async(args=(message,), queue=self.queue_name,
                                 producer=connection.Producer(), retry=True,
                                 retry_policy={"max_retries": 2, "interval_start": 0,
                                               "interval_step": min(0.5, part),
                                               "interval_max": min(1.0, part)})
        except (KombuError, OperationalError, OSError) as exc:
            log.warning("task %s: not queued: %s", launch.task_id, exc)
            raise MCPError(f"the task could not be queued: the task queue cannot be reached "
                           f"({type(exc).__name__}); try again later",
                           code=INTERNAL_ERROR) from None

    def running(self) -> int:
        """Tasks of this executor running in this process: none (they run on workers)."""
        return 0

    def cancel_local(self, task_id: str) -> None:
        """Nothing to wake here: the worker running it reads the cancellation from the
        store (within 0.1 s of a ``check_cancelled``, at once in a ``sleep``)."""

    def close(self, timeout: float = 5.0) -> bool:
        """Nothing runs here: the tasks on workers go on (they outlive a web worker)."""
        return True

    def __repr__(self) -> str:
        return f"<CeleryExecutor {self.name} queue={self.queue_name!r}>"
