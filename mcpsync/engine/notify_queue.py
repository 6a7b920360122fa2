"""The bounded queue of a connection's inbound notifications.

A slow notification callback must not make a chatty peer cost unbounded memory: the
queue admits a notification only within a count and a byte bound and drops the rest,
warning once per burst (:class:`QueueBound`). A push-mode connection (HTTP) runs the jobs
in order on its shared handler pool rather than on a thread of its own
(:class:`SerialJobs`).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

from ..threads.pool import PoolFullError, WorkerPool

logger = logging.getLogger("mcpsync.engine")

#: A notification job and the encoded bytes it holds (-1: not counted against the bound).
Job = tuple[Callable[[], None], int]


class QueueBound:
    """The notification queue's bound: admits a notification or drops it, warning once per
    burst (from the first drop until the queue has drained to half)."""

    def __init__(self, max_count: int, max_bytes: int, name: str) -> None:
        self._lock = threading.Lock()
        self._max_count = max_count
        self._max_bytes = max_bytes
        self._name = name
        self.count = 0
        self._bytes = 0
        self.dropped = 0
        self._burst = 0  # dropped in the current burst; 0 when not dropping

    def admit(self, size: int) -> bool:
        with self._lock:
            if self.count < self._max_count and self._bytes + size <= self._max_bytes:
                self.count += 1
                self._bytes += size
                return True
            self.dropped += 1
            self._burst += 1
            first = self._burst == 1
            count, held = self.count, self._bytes
        if first:
            logger.warning(
                "%s: dropping inbound notifications: %d (%d bytes) are waiting for a slow "
                "notification callback (bounds: %d, %d bytes)", self._name, count, held,
                self._max_count, self._max_bytes)
        return False

    def release(self, size: int) -> None:
        with self._lock:
            self.count -= 1
            self._bytes -= size
            burst = self._burst
            drained = burst and self.count <= self._max_count // 2 and (
                self._bytes <= self._max_bytes // 2)
            if drained:
                self._burst = 0
        if drained:
            logger.warning("%s: the notification queue drained; %d notifications were dropped",
                           self._name, burst)


class SerialJobs:
    """The notification jobs of a push-mode connection, run in arrival order on its
    (shared) handler pool rather than on a thread of its own: an idle connection then
    holds no thread at all. Same ``put`` as the queue it replaces. Thread-safe."""

    def __init__(self, pool: WorkerPool, name: str, release: Callable[[int], None]) -> None:
        self._pool = pool
        self._name = name
        self._release = release
        self._jobs: collections.deque[Job] = collections.deque()
        self._lock = threading.Lock()
        self._running = False
        #: The thread draining the jobs now (``None`` when none is).
        self.thread: threading.Thread | None = None

    def put(self, item: Job | None) -> None:
        if item is None:
            return  # the end: nothing is parked, nothing to stop
        with self._lock:
            self._jobs.append(item)
            if self._running:
                return
            self._running = True
        try:
            self._pool.submit(self._drain)
        except (PoolFullError, RuntimeError):
            self._drain()  # the pool is full or closing: run them here, still in order

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._running = False
                    self.thread = None
                    return
                job, size = self._jobs.popleft()
                self.thread = threading.current_thread()
            if size >= 0:
                self._release(size)
            try:
                job()
            except Exception:
                logger.exception("%s: notification callback failed", self._name)
