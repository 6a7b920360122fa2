"""A bounded pool of named, reusable handler threads.

Why not :class:`concurrent.futures.ThreadPoolExecutor`: it never retires idle threads, it
cannot join with a bound, and it cannot refuse work when its queue is full. A server that
runs blocking user code needs all three: a burst of 256 calls should leave no 256 idle
threads behind, shutdown must not hang on a tool that ignores cancellation, and a flood of
requests should be answered "busy" rather than queued without limit.

Threads are started on demand up to ``max_workers``, reused while work keeps coming (a
fresh thread per call costs about five times a pooled one), and exit after ``idle_timeout``
seconds without work. Thread-safe.

A job that will run for a long time without being work in the cap's sense (a
``subscriptions/listen`` stream, parked until the client leaves) gives its slot back with
:func:`release_current_slot`: its thread leaves the capped set at once (a queued job may
start on a new thread), ends when that job ends, and is still joined at shutdown. The
caller bounds how many jobs do that (the server's ``max_subscriptions``): the pool does not.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: Its name from before the pool moved here: logging set up for the engine still sees it.
logger = logging.getLogger("mcpsync.engine")

Job = Callable[[], None]


class PoolFullError(RuntimeError):
    """The pool is at its worker cap and its backlog is full."""


class _Worker:
    """One pool thread's hand-off slot: a job, and the lock it sleeps on while idle.
    ``released``: its job gave the slot back, so the thread ends with that job."""

    __slots__ = ("job", "released", "wake")

    def __init__(self, job: Job | None) -> None:
        self.job = job
        self.released = False
        self.wake = threading.Lock()
        self.wake.acquire()  # held while the worker has nothing to do


#: The pool and worker of the job running on this thread (unset outside pool threads).
_current = threading.local()


def release_current_slot() -> bool:
    """Give the slot of the pool job running on this thread back to its pool's cap.

    For a job that parks for a long time (a subscription): from now on it does not count
    against ``max_workers``, and its thread ends when the job does. False when this thread
    is not running a pool job, or already gave its slot back.
    """
    slot: tuple[WorkerPool, _Worker] | None = getattr(_current, "slot", None)
    if slot is None:
        return False
    pool, worker = slot
    return pool._release(worker)


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
        #: Threads whose job gave its slot back: outside the cap, still joined at shutdown.
        self._released: set[threading.Thread] = set()
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

    def _release(self, me: _Worker) -> bool:
        start: threading.Thread | None = None
        with self._lock:
            if me.released:
                return False
            me.released = True
            thread = threading.current_thread()
            self._threads.discard(thread)
            self._released.add(thread)
            if self._jobs and not self._shutdown and len(self._threads) < self.max_workers:
                # Work was waiting for exactly this slot: start it now, not at the next
                # submit.
                self._serial += 1
                start = threading.Thread(
                    target=self._run, args=(_Worker(self._jobs.popleft()),),
                    name=f"{self._name}-{self._serial}", daemon=True)
                self._threads.add(start)
        if start is not None:
            start.start()
        return True

    def _run(self, me: _Worker) -> None:
        thread = threading.current_thread()
        _current.slot = (self, me)
        while True:
            job, me.job = me.job, None
            if job is None:  # shut down
                break
            try:
                job()
            except BaseException:  # a job must never take its thread down silently
                logger.exception("unhandled error in %s", thread.name)
            job = None
            if me.released:  # outside the cap now: take no more work
                break
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
        _current.slot = None
        with self._lock:
            self._threads.discard(thread)
            self._released.discard(thread)

    @property
    def size(self) -> int:
        """Threads alive now (busy or idle) that count against ``max_workers``."""
        with self._lock:
            return len(self._threads)

    def load(self) -> tuple[int, int, int]:
        """``(threads running a job, jobs waiting for a thread, max_workers)`` now: for
        the telemetry gauges."""
        with self._lock:
            return len(self._threads) - len(self._idle), len(self._jobs), self.max_workers

    @property
    def released(self) -> int:
        """Threads running a job that gave its slot back (see :func:`release_current_slot`)."""
        with self._lock:
            return len(self._released)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Stop taking work, let running jobs finish, join for at most ``timeout`` seconds.

        Jobs still queued are dropped. Returns False when some thread was still busy at the
        deadline (it is a daemon thread and will not keep the process alive).
        """
        with self._lock:
            self._shutdown = True
            self._jobs.clear()
            threads = list(self._threads | self._released)
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


class HandOffPool(WorkerPool):
    """A :class:`WorkerPool` whose next job from an armed thread runs on that thread.
    For a caller that knows the job it is about to cause is quick and cannot stream (the
    HTTP app's handshake-era POST of a tool without a context): the hand-off to a pool
    thread would cost two thread switches and buy nothing, and the code that submits
    only knows ``submit``. Thread-safe: arming is per thread."""

    def __init__(self, max_workers: int, *, name: str, max_backlog: int) -> None:
        super().__init__(max_workers, name=name, max_backlog=max_backlog)
        self._armed = threading.local()

    @contextmanager
    def inline_next(self) -> Iterator[None]:
        """Within the block, the first job this thread submits runs at once, here."""
        self._armed.on = True
        try:
            yield
        finally:
            self._armed.on = False

    def submit(self, job: Job) -> None:
        armed = self._armed
        if getattr(armed, "on", False) and not self._shutdown:  # shut down: refused below
            armed.on = False
            try:
                job()
            except Exception:  # as on a pool thread: logged, and the caller serves on
                logger.exception("unhandled error in an inline handler on %s",
                                 threading.current_thread().name)
            # Anything else is the caller's own, as had it run the job itself: the job's
            # request was answered (InboundExecutor.settle), which lets out only what came
            # to the main thread (Ctrl-C, a test runner's timeout, sys.exit() there).
            return
        super().submit(job)
