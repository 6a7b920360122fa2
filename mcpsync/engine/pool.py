"""A bounded pool of named, reusable handler threads.

Why not :class:`concurrent.futures.ThreadPoolExecutor`: it never retires idle threads, it
cannot join with a bound, and it cannot refuse work when its queue is full. A server that
runs blocking user code needs all three: a burst of 256 calls should leave no 256 idle
threads behind, shutdown must not hang on a tool that ignores cancellation, and a flood of
requests should be answered "busy" rather than queued without limit.

Threads are started on demand up to ``max_workers``, reused while work keeps coming (a
fresh thread per call costs about five times a pooled one), and exit after ``idle_timeout``
seconds without work. Thread-safe.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("mcpsync.engine")

Job = Callable[[], None]


class PoolFullError(RuntimeError):
    """The pool is at its worker cap and its backlog is full."""


class _Worker:
    """One pool thread's hand-off slot: a job, and the lock it sleeps on while idle."""

    __slots__ = ("job", "wake")

    def __init__(self, job: Job | None) -> None:
        self.job = job
        self.wake = threading.Lock()
        self.wake.acquire()  # held while the worker has nothing to do


class WorkerPool:
    """Run jobs on at most ``max_workers`` threads named ``{name}-{n}``.

    A job given to an idle thread is handed over directly: the job goes into that thread's
    slot and its own lock is released (cheaper than a shared ``Condition``, whose waiters
    each allocate a lock per wait). Jobs beyond the idle threads start new threads up to
    the cap, then wait in a bounded backlog.
    """

    def __init__(
        self,
        max_workers: int,
        *,
        name: str = "mcpsync-handler",
        max_backlog: int = 4096,
        idle_timeout: float = 30.0,
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self.max_backlog = max_backlog
        self.idle_timeout = idle_timeout
        self._name = name
        self._lock = threading.Lock()
        self._jobs: collections.deque[Job] = collections.deque()
        self._idle: list[_Worker] = []
        self._threads: set[threading.Thread] = set()
        self._serial = 0
        self._shutdown = False

    def submit(self, job: Job) -> None:
        """Run ``job`` on an idle thread, a new one (within the cap), or queue it."""
        start: threading.Thread | None = None
        with self._lock:
            if self._shutdown:
                raise RuntimeError("pool is shut down")
            if self._idle:
                worker = self._idle.pop()
                worker.job = job
            elif len(self._threads) < self.max_workers:
                worker = None
                self._serial += 1
                start = threading.Thread(
                    target=self._run, args=(_Worker(job),),
                    name=f"{self._name}-{self._serial}", daemon=True)
                self._threads.add(start)
            elif len(self._jobs) >= self.max_backlog:
                raise PoolFullError(
                    f"{self.max_workers} handlers busy and {len(self._jobs)} requests queued")
            else:
                worker = None
                self._jobs.append(job)
        if worker is not None:
            worker.wake.release()
        elif start is not None:
            start.start()

    def _run(self, me: _Worker) -> None:
        thread = threading.current_thread()
        while True:
            job, me.job = me.job, None
            if job is None:  # shut down
                break
            try:
                job()
            except BaseException:  # a job must never take its thread down silently
                logger.exception("unhandled error in %s", thread.name)
            job = None
            with self._lock:
                if self._jobs:
                    me.job = self._jobs.popleft()
                    continue
                if self._shutdown:
                    break
                self._idle.append(me)
            if me.wake.acquire(timeout=self.idle_timeout):
                continue  # handed a job (or None: shut down)
            with self._lock:
                if me in self._idle:  # nobody picked this thread meanwhile: retire it
                    self._idle.remove(me)
                    break
            me.wake.acquire()  # picked just as it timed out: the job is on its way
        with self._lock:
            self._threads.discard(thread)

    @property
    def size(self) -> int:
        """Threads alive now (busy or idle)."""
        with self._lock:
            return len(self._threads)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Stop taking work, let running jobs finish, join for at most ``timeout`` seconds.

        Jobs still queued are dropped. Returns False when some thread was still busy at the
        deadline (it is a daemon thread and will not keep the process alive).
        """
        with self._lock:
            self._shutdown = True
            self._jobs.clear()
            threads = list(self._threads)
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.job = None
            worker.wake.release()
        deadline = time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is current:
                continue
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads if t is not current)
