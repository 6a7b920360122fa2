"""The development server's handler threads: a bounded pool that refuses work rather than
queueing it.

A request reaches the pool only once it has arrived in full (see :mod:`.reader`),
so a thread here is never held by a slow client's head or body; it is held by the
application (a tool call, an SSE stream) and by writing the response. Refusing at the
bound, instead of queueing, is what lets the reader answer ``503`` at once: a queued
request would wait for a stream that may last an hour.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Final

#: How long a thread with nothing to do waits for work before it ends.
_IDLE_SECONDS: Final = 30.0

Job = Callable[[], None]


class HandlerPool:
    """At most ``size`` named threads running jobs; :meth:`submit` refuses when all are
    busy. Threads start on demand, are reused while work comes, and end after
    :data:`_IDLE_SECONDS` idle or at :meth:`close`.

    Thread-safe. The lock guards only the counters; jobs run outside it.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self._name = name
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = 0  # threads waiting on the queue, each owed at most one job
        self._threads: set[threading.Thread] = set()
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._closed = False

    @property
    def busy(self) -> int:
        """Jobs running now."""
        with self._lock:
            return self._busy

    def submit(self, job: Job) -> bool:
        """Run ``job`` on a pool thread; ``False`` (and nothing runs) if all are busy."""
        with self._lock:
            if self._closed or self._busy >= self.size:
                return False
            self._busy += 1
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)
                return True
            thread = threading.Thread(target=self._work, args=(job,), daemon=True,
                                      name=f"{self._name}-{next(self._numbers)}")
            self._threads.add(thread)
        try:
            thread.start()
        except BaseException:
            with self._lock:
                self._threads.discard(thread)
                self._busy -= 1
            raise
        return True

    def _work(self, job: Job | None) -> None:
        try:
            while job is not None:
                try:
                    job()
                finally:
                    with self._lock:
                        self._busy -= 1
                        self._idle += 1
                job = self._next()
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _next(self) -> Job | None:
        """The next job, or ``None`` to end this thread (idle too long, or closing)."""
        try:
            return self._jobs.get(timeout=_IDLE_SECONDS)
        except queue.Empty:
            pass
        with self._lock:
            if self._idle:  # no job is owed to an idle thread: this one may go
                self._idle -= 1
                return None
        # Every idle thread is owed a job that submit() has put or is putting: take it.
        return self._jobs.get()

    def close(self) -> None:
        """Refuse new jobs and tell idle threads to end (running jobs finish on their own)."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._jobs.put(None)

    def join(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds in all, for the pool's threads to end."""
        deadline = time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


__all__ = ["HandlerPool"]
