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


class WorkerPool:
    """Run jobs on at most ``max_workers`` threads named ``{name}-{n}``."""

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
        self._work = threading.Condition(self._lock)
        self._jobs: collections.deque[Job] = collections.deque()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._serial = 0
        self._shutdown = False

    def submit(self, job: Job) -> None:
        """Queue ``job``; start a thread for it when none is idle and the cap allows."""
        start: threading.Thread | None = None
        with self._lock:
            if self._shutdown:
                raise RuntimeError("pool is shut down")
            if self._idle == 0 and len(self._threads) >= self.max_workers and (
                len(self._jobs) >= self.max_backlog
            ):
                raise PoolFullError(
                    f"{self.max_workers} handlers busy and {len(self._jobs)} requests queued"
                )
            self._jobs.append(job)
            if self._idle > len(self._jobs) - 1:
                self._work.notify()
            elif len(self._threads) < self.max_workers:
                self._serial += 1
                start = threading.Thread(
                    target=self._run, name=f"{self._name}-{self._serial}", daemon=True
                )
                self._threads.add(start)
        if start is not None:
            start.start()

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                while not self._jobs:
                    if self._shutdown:
                        self._threads.discard(me)
                        return
                    self._idle += 1
                    got_work = self._work.wait(self.idle_timeout)
                    self._idle -= 1
                    if not got_work and not self._jobs:
                        self._threads.discard(me)
                        return
                job = self._jobs.popleft()
            try:
                job()
            except BaseException:  # a job must never take its thread down silently
                logger.exception("unhandled error in %s", me.name)

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
            self._work.notify_all()
        deadline = time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is current:
                continue
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads if t is not current)
