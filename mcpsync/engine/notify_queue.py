"""The bounded queue of a connection's inbound notifications: :class:`Notifications`.

Inbound notifications and progress callbacks run in arrival order on one
``{name}-notify`` thread, never on the reader (a callback may block). A slow notification
callback must not make a chatty peer cost unbounded memory: the queue admits a
notification only within a count and a byte bound and drops the rest, warning once per
burst (:class:`QueueBound`); answers queued behind them for ordering are never dropped. A
push-mode connection (HTTP) runs the jobs in order on its shared handler pool rather than
on a thread of its own (:class:`SerialJobs`).
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from collections.abc import Callable

from ..errors import UnencodableMessageError
from ..protocol.jsonrpc import Notification, encode
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


class Notifications:
    """A connection's queue of notification jobs and the thread that runs them (none in
    push mode: :class:`SerialJobs` on the shared pool). Thread-safe."""

    def __init__(self, name: str, pool: WorkerPool, *, push: bool, max_count: int,
                 max_bytes: int) -> None:
        self._name = name
        self._bound = QueueBound(max_count, max_bytes, name)
        #: Jobs for the notification thread (or, in push mode, the shared pool), each with
        #: the bytes it holds (-1: an answer queued for ordering, which is not counted and
        #: never dropped).
        self._jobs: queue.SimpleQueue[Job | None] | SerialJobs = (
            SerialJobs(pool, name, self._bound.release) if push else queue.SimpleQueue())
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the ``{name}-notify`` thread (not in push mode)."""
        self._thread = threading.Thread(target=self._loop, name=f"{self._name}-notify",
                                        daemon=True)
        self._thread.start()

    def enqueue(self, job: Callable[[], None], message: Notification) -> None:
        """Queue ``job`` for ``message``, or drop it when the queue is past its bound."""
        try:
            size = len(encode(message))
        except UnencodableMessageError:
            # It arrived as JSON, so it has a size; a lone surrogate only stops *us* from
            # writing it back out. Its repr is as long, near enough, for the bound.
            size = len(message.method) + len(repr(message.params))
        if self._bound.admit(size):
            self._jobs.put((job, size))

    def after(self, job: Callable[[], None]) -> None:
        """Queue ``job`` behind every job queued now, outside the bound: never dropped."""
        self._jobs.put((job, -1))

    def on_own_thread(self) -> bool:
        """True on the thread that runs the jobs now (which must not wait on itself)."""
        return threading.current_thread() in (self._thread, getattr(self._jobs, "thread",
                                                                    None))

    def close(self) -> None:
        """The notification thread ends once the jobs queued before this have run."""
        self._jobs.put(None)

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def count(self) -> int:
        """Notifications waiting for the notification thread."""
        return self._bound.count

    @property
    def dropped(self) -> int:
        """Notifications dropped because the queue was full, since the start."""
        return self._bound.dropped

    def _loop(self) -> None:
        jobs = self._jobs
        assert isinstance(jobs, queue.SimpleQueue)  # the thread exists only outside push mode
        while True:
            item = jobs.get()
            if item is None:
                return
            job, size = item
            if size >= 0:
                self._bound.release(size)
            try:
                job()
            except Exception:
                logger.exception("%s: notification callback failed", self._name)
