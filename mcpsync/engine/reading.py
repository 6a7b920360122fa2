"""The read side of one connection: who reads its stream, the two loops that read it
(:class:`Reading`), and the queue its inbound notifications wait in (:class:`Notifications`).

* The **reader threads** (:class:`~mcpsync.engine.inline.Readers`: one reads at a time)
  run :meth:`Reading._loop`: receive, route (the connection's ``take``), run a request
  routed to run inline, and, on a client over stdio, lend the stream to callers while
  nothing is pending.
* A **caller** reading its own answer (:class:`ReadRole`, below: a client over a byte
  stream, never with inline runs) runs :meth:`Reading.read_own`: it routes whatever it
  reads exactly as the reader thread does, until its own answer has been routed.

Whichever thread finds the stream ended ends the connection (the connection's ``end``).
None of this exists in push mode: the owner hands messages to ``Connection.deliver``.

**The read role** (:class:`ReadRole`): who reads a client's stream now, its reader thread
or a caller reading its own answer. Why: over stdio, an answer that comes through the
reader thread costs two thread wake-ups and a GIL hand-over per call: the reader wakes for
the answer, then wakes the caller. A caller that reads its answer itself costs one wake-up
(its own, from ``poll``): a third less client CPU per call (``benchmarks/client.py``: 36
against 54 µs). So while calls follow one another, the connection's reader thread *lends*
the stream to its callers:

* The reader thread lends the stream when nothing is pending and no message it read waits
  to be taken (:meth:`ReadRole.lend`). It then parks on a condition, not on the stream.
* A caller whose request is sent takes the stream when nobody holds it
  (:meth:`ReadRole.take`, never waiting), reads and routes every message until its own
  answer has been routed or its deadline passed, and gives it back
  (:meth:`ReadRole.give_back`). What it reads for others (notifications, other callers'
  answers, the server's own requests) is routed exactly as the reader thread routes it:
  the same ``Connection._take``. A caller that finds the stream held waits for its answer
  as before.
* The reader thread takes the stream back when a whole :data:`GRACE` passed in which no
  caller took it, at once when a caller gives it back while other calls still wait (or
  messages wait to be taken), and when the connection closes.

So in a loop of calls the reader thread wakes once per grace, not once per call; after the
loop, a message the server sends unasked (a notification, a ``ping``) waits at most two
graces to be read. Whether anything waits is decided under the role's lock, after the
caller registered its request, so an answer can never be left with nobody reading.

**Inbound notifications** (:class:`Notifications`) and progress callbacks run in arrival
order on one ``{name}-notify`` thread, never on the reader (a callback may block). A slow
notification callback must not make a chatty peer cost unbounded memory: the queue admits
a notification only within a count and a byte bound and drops the rest, warning once per
burst (:class:`QueueBound`); answers queued behind them for ordering are never dropped. A
push-mode connection (HTTP) runs the jobs in order on its shared handler pool rather than
on a thread of its own (:class:`SerialJobs`).
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Final

from ..errors import UnencodableMessageError
from ..protocol.jsonrpc import Notification, RequestId, encode
from ..threads.pool import PoolFullError, WorkerPool
from ..transports.base import PolledTransport, Received, Transport
from .inline import Readers
from .outbound import PendingTable
from .writer import Closing

logger = logging.getLogger("mcpsync.engine")

#: Route one received item; False when the connection turned out to be closed.
Take = Callable[[Received], bool]
#: End the connection: why, and how long running handlers may take to answer.
End = Callable[[str, float], None]

#: How long the reader thread leaves the stream to callers after the last one took it
#: (seconds): the bound on how late an unasked message is read once calls stop.
GRACE: Final = 0.01
#: A caller reading its own answer looks at most this long (seconds) at the stream before
#: it checks again whether its call is still pending (cancelled by another thread, say).
CALLER_SLICE: Final = 0.05

_READER: Final = "reader"  # a caller holds it as its thread's ident (an int)


class Reading:
    """The read side of one connection (see the module doc). ``pending``: the table of
    our calls, asked (never changed) whether anything waits for an answer."""

    def __init__(self, transport: Transport, pending: PendingTable, *, name: str,
                 push: bool, inline: bool, caller_reads: bool, max_displaced: int,
                 drain_timeout: float, closing: Closing, take: Take, end: End) -> None:
        self._transport = transport
        self._pending = pending
        self._drain_timeout = drain_timeout
        self._closing = closing
        self._take = take
        self._end = end
        #: Reader threads (none in push mode): one reads at a time, see engine/inline.py.
        self.readers: Readers | None = None if push else Readers(
            name, self._loop, max_displaced=max_displaced)
        #: ``caller_reads``: a caller may read its own answer (a client over stdio; never
        #: with inline runs, whose reader hand-over is engine/inline.py's).
        self.role: ReadRole | None = None
        self._polled: PolledTransport | None = None
        if (caller_reads and not push and not inline
                and isinstance(transport, PolledTransport) and transport.pollable):
            self.role = ReadRole()
            self._polled = transport

    def start(self) -> None:
        """Start the first reader thread (none in push mode)."""
        if self.readers is not None:
            self.readers.start()

    def close(self) -> None:
        """The connection ended: a lending reader and the watch thread stop."""
        if self.role is not None:
            self.role.close()
        if self.readers is not None:
            self.readers.close()

    def join(self, deadline: float) -> None:
        """Join the reader threads until ``deadline`` (``time.monotonic()``)."""
        if self.readers is not None:
            self.readers.join(deadline)

    # -- a caller reading its own answer -------------------------------------------------

    def read_own(self, request_id: RequestId, deadline: float) -> None:
        """A caller whose request is sent: read and route until ``request_id`` is no longer
        pending or ``deadline`` (``time.monotonic()``), when the stream is free; else
        return at once (the reader thread, or another caller, reads its answer)."""
        role = self.role
        if role is None:
            return
        try:
            if role.take():
                self._read_own(request_id, deadline)
        finally:
            # Also when a KeyboardInterrupt landed just after take() succeeded
            # (the stream stayed held by nobody reading: every later call hung).
            role.give_back(self._idle)

    def _read_own(self, request_id: RequestId, deadline: float) -> None:
        """A caller holding the read role: read and route until ``request_id`` is no longer
        pending (answered, cancelled, failed) or ``deadline`` (``time.monotonic()``)."""
        polled = self._polled
        assert polled is not None
        pending = self._pending
        reason, drain = "", self._drain_timeout
        while pending.has(request_id):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                item = polled.receive_within(min(left, CALLER_SLICE))
            except TimeoutError:
                continue
            except Exception as exc:
                reason = self._closing.receive_failed(exc)
                break
            if item is None:
                reason = "peer closed the connection"
                break
            if not self._take(item):
                reason, drain = "connection closed", 0.0
                break
        else:
            return
        self._end(reason, drain)

    def _idle(self) -> bool:
        """Nothing to read for anyone: no call pending, no message read and not taken."""
        polled = self._polled
        return self._pending.empty and not (polled is not None and polled.buffered)

    # -- the reader threads --------------------------------------------------------------

    def _loop(self) -> None:
        reason = "peer closed the connection"
        readers = self.readers
        assert readers is not None
        role = self.role
        displaced = False
        try:
            while True:
                try:
                    item = self._transport.receive()
                except Exception as exc:
                    reason = self._closing.receive_failed(exc)
                    break
                if item is None:
                    break
                routed = self._take(item)
                if not readers.run_deferred():
                    displaced = True  # another thread reads (and shuts down) now
                    return
                if not routed:
                    break
                if role is not None and self._idle() and not role.lend(self._idle):
                    break  # closed meanwhile (by a caller that was reading)
        finally:
            if not displaced:
                self._end(reason, self._drain_timeout)


class ReadRole:
    """The one permission to read a connection's stream (the read role: see the module
    doc). Thread-safe."""

    __slots__ = ("_changed", "_closed", "_holder", "_lock", "_takes", "_urgent", "grace",
                 "lent")

    def __init__(self, grace: float = GRACE) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._holder: str | int | None = _READER  # the reader thread reads from the start
        self._takes = 0
        self._urgent = False
        self._closed = False
        #: Calls that read their own answer (a statistic, for tests and benchmarks).
        self.lent = 0

    def take(self) -> bool:
        """A caller's: hold the stream if nobody does (never waits). Then read until the
        call is answered, and :meth:`give_back` (in a ``finally``, whatever :meth:`take`
        returned or raised: a ``KeyboardInterrupt`` can land between any two bytecodes)."""
        if self._holder is not None:  # a hint without the lock; decided below
            return False
        with self._lock:
            if self._holder is not None or self._closed:
                return False
            self._holder = threading.get_ident()
            self._takes += 1
            self.lent += 1
            return True

    def give_back(self, idle: Callable[[], bool]) -> None:
        """A caller's: stop reading, if this thread holds the stream (else nothing).
        ``idle()`` (asked under the lock) says whether nothing waits to be read: when
        something does, the reader thread takes the stream at once."""
        if self._holder != threading.get_ident():  # only this thread can make it so
            return
        with self._lock:
            self._holder = None
            if not idle():
                self._urgent = True
                self._changed.notify()

    def lend(self, idle: Callable[[], bool]) -> bool:
        """The reader thread's, between messages: when ``idle()`` (asked under the lock),
        leave the stream to callers until none took it for a whole grace, or one gave it
        back with something waiting. True: the reader thread reads again; False: closed."""
        with self._lock:
            if self._closed:
                return False
            if not idle():
                return True
            self._holder = None
            self._urgent = False
            while True:
                seen = self._takes
                self._changed.wait(self.grace)
                if self._closed:
                    return False
                if self._holder is None and (self._urgent or self._takes == seen):
                    self._holder = _READER
                    self._urgent = False
                    return True

    def close(self) -> None:
        """The connection ended: a lending reader thread returns False."""
        with self._lock:
            self._closed = True
            self._changed.notify_all()


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
