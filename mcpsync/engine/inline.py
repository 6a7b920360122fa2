"""Running quick requests on the reader thread itself, without ever stalling the stream.

Why: handing a request from the reader to a pool thread costs a thread wake-up and a GIL
hand-over per call, several times what an echo tool itself costs. So a connection that
opts in (a server session) runs a request *inline*, on the thread that read it, when its
key (``tools/call`` of one tool, say) has not been seen to be slow. Two things keep a
slow or blocking handler from stalling the stream:

* :class:`InlinePolicy` learns which keys are slow: a key whose inline run was displaced
  (below) runs on the pool from then on, timed there, and is tried inline again once
  :data:`RETRY_AFTER_QUICK` of its pool runs in a row took less than :data:`SLOW_RUN`, or
  after 4,096 pool runs (then 8,192 ... at most 65,536: a quick tool can look slow on a
  crowded pool). A tool that blocks is therefore tried inline again once in its first
  twelve thousand calls, and one that was slow only once (its first call's imports, a
  pause of the whole process) comes back. Such a try is displaced at its first whole tick,
  late or not.
* :class:`Readers` is a leader/follower reader: a ``{name}-watch`` thread looks at the
  inline run every :data:`WATCH_TICK`; a run still going after a whole tick is *displaced*
  (unless the watch thread itself woke late: the process is starved, not the run):
  a new reader thread (``{name}-reader-N``) takes over reading at once, and the displaced
  thread finishes its request, writes its answer and ends. A handler that asks the peer
  something (``Connection.request``) hands reading over itself before it waits, since only
  a reader can read the answer. The watch thread ticks only while inline runs happen and
  parks otherwise, so an idle connection costs no wake-ups.

Bounds: at most ``max_displaced`` displaced threads at once (the connection passes its
handler cap); past it a stalled run keeps the stream waiting until it ends, as a full pool
would. The slow-key table holds at most :data:`MAX_SLOW_KEYS` keys; once full, keys not in
it run on the pool (nothing more is learned, nothing more is tried inline).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

logger = logging.getLogger("mcpsync.engine")

#: How often the watch thread looks at an inline run (seconds): a run that blocks stalls
#: reading for one to two ticks. CPython's switch interval (5 ms): a quick run that merely
#: waited for the GIL behind another thread must not look stalled.
WATCH_TICK = 0.005
#: A run this long (seconds) is slow. Two ticks: a quick run that waited for the GIL
#: behind a busy pool, or was preempted on a loaded machine, must not look slow (a quick
#: tool wrongly sent to the pool costs every call of it a thread hand-off).
SLOW_RUN = 2 * WATCH_TICK
#: Ticks in a row that the watch thread itself woke later than :data:`SLOW_RUN` after it
#: asked: not counted against a run (on a starved machine every thread is late), up to
#: this many; then the run is displaced all the same.
MAX_LATE_TICKS = 4
#: Slow keys remembered per connection, at most.
MAX_SLOW_KEYS = 1024
#: Pool runs of a slow key, each quicker than a tick, in a row, before it is tried inline
#: again.
RETRY_AFTER_QUICK = 16
#: Pool runs of a slow key, quick or not, before it is tried inline again; doubles each
#: time the try is slow, up to :data:`MAX_RETRY_AFTER`.
FIRST_RETRY_AFTER = 4096
MAX_RETRY_AFTER = 65536


class _Slow:
    """What is known of one slow key."""

    __slots__ = ("interval", "left", "quick")

    def __init__(self) -> None:
        self.quick = 0  # its pool runs in a row quicker than a tick
        self.interval = FIRST_RETRY_AFTER
        self.left = FIRST_RETRY_AFTER  # pool runs before the next try anyway


class InlinePolicy:
    """Which request keys run inline. Thread-safe."""

    def __init__(self, max_keys: int = MAX_SLOW_KEYS) -> None:
        self._lock = threading.Lock()
        self._max_keys = max_keys
        self._slow: dict[Hashable, _Slow] = {}
        self._full = False

    def inline(self, key: Hashable) -> bool:
        """True: run this request inline now (and report it with :meth:`ran`); False: on
        the pool (report it with :meth:`pooled` when :meth:`is_slow`)."""
        with self._lock:
            slow = self._slow.get(key)
            if slow is None:
                return not self._full
            slow.left -= 1
            if slow.quick < RETRY_AFTER_QUICK and slow.left > 0:
                return False
            slow.quick = 0  # tried now; ran() forgets the key if it is quick
            slow.left = slow.interval
            return True

    def is_slow(self, key: Hashable) -> bool:
        return key in self._slow

    def ran(self, key: Hashable, elapsed: float) -> None:
        """An inline run of ``key`` took ``elapsed`` seconds and was not displaced. Only a
        displaced run (:meth:`stalled`) makes a key slow: a run that the watch let finish
        did not hold up reading for long, whatever the clock says (a loaded machine
        stretches every run)."""
        if elapsed < SLOW_RUN and key in self._slow:
            with self._lock:
                self._slow.pop(key, None)  # quick (again)

    def pooled(self, key: Hashable, elapsed: float) -> None:
        """A pool run of the slow key ``key`` took ``elapsed`` seconds."""
        with self._lock:
            slow = self._slow.get(key)
            if slow is not None:
                slow.quick = slow.quick + 1 if elapsed < SLOW_RUN else 0

    def stalled(self, key: Hashable) -> None:
        """An inline run of ``key`` was slow: run it on the pool from now on."""
        with self._lock:
            slow = self._slow.get(key)
            if slow is not None:  # a try that failed: wait twice as long for the next
                slow.quick = 0
                slow.interval = slow.left = min(slow.interval * 2, MAX_RETRY_AFTER)
            elif len(self._slow) < self._max_keys:
                self._slow[key] = _Slow()
            else:
                self._full = True  # cannot remember it: stop trying unknown keys inline

    @property
    def slow_keys(self) -> int:
        with self._lock:
            return len(self._slow)


class Readers:
    """A connection's reader threads: exactly one reads at a time (the *reader*); see the
    module doc. ``target`` is the read loop; it runs on every reader thread started."""

    def __init__(self, name: str, target: Callable[[], None], *, max_displaced: int,
                 policy: InlinePolicy | None = None) -> None:
        self._name = name
        self._target = target
        self._max_displaced = max_displaced
        self.policy = policy if policy is not None else InlinePolicy()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._reader: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._serial = 0
        self._running = False  # the reader is running a request inline
        self._key: Hashable = None
        self._retry = False  # the run is a try of a key known to be slow
        self._seq = 0  # inline runs begun
        self._displaced = 0
        self._watch: threading.Thread | None = None
        self._parked = False
        self._closed = False
        #: A request the reader routed to run inline once the receive path has returned
        #: (only the reading thread sets and takes it).
        self._deferred: tuple[Hashable, Callable[[], None]] | None = None

    # -- reader threads ------------------------------------------------------------------

    def start(self) -> None:
        """Start the first reader, ``{name}-reader``."""
        with self._lock:
            thread = self._new_reader_locked()
        thread.start()

    def _new_reader_locked(self) -> threading.Thread:
        self._serial += 1
        suffix = "" if self._serial == 1 else f"-{self._serial}"
        thread = threading.Thread(target=self._target, name=f"{self._name}-reader{suffix}",
                                  daemon=True)
        self._reader = thread
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        return thread

    def is_reader(self) -> bool:
        """True on the thread that reads now."""
        return threading.current_thread() is self._reader

    def defer(self, key: Hashable, job: Callable[[], None]) -> None:
        """On the reader, while it routes a message: run ``job`` (one request) inline once
        the receive path (middleware, bound context) has returned, at
        :meth:`run_deferred`: a handler never runs inside receive middleware."""
        self._deferred = (key, job)

    def run_deferred(self) -> bool:
        """On the reader, after each message it routed: run the request :meth:`defer`
        left, if any (:meth:`run_inline`). False when it was displaced meanwhile: another
        thread reads now, and this one must end."""
        deferred = self._deferred
        if deferred is None:
            return True
        self._deferred = None
        key, job = deferred
        return self.run_inline(key, job)

    def run_inline(self, key: Hashable, job: Callable[[], None]) -> bool:
        """Run ``job()`` (one request) on this, the reader thread, watched. False when it
        was displaced meanwhile: another thread reads now, and this one must end."""
        me = threading.current_thread()
        start_watch: threading.Thread | None = None
        retry = self.policy.is_slow(key)
        with self._lock:
            self._seq += 1
            self._running = True
            self._key = key
            self._retry = retry
            if self._watch is None and not self._closed:
                start_watch = self._watch = threading.Thread(
                    target=self._watch_loop, name=f"{self._name}-watch", daemon=True)
            elif self._parked:
                self._parked = False
                self._wake.notify()
        if start_watch is not None:
            start_watch.start()
        began = time.perf_counter()
        try:
            job()
        except BaseException:  # as on a pool thread: never take the reader down silently
            logger.exception("unhandled error in %s", me.name)
        elapsed = time.perf_counter() - began
        with self._lock:
            still = self._reader is me
            if still:
                self._running = False
            else:
                self._displaced -= 1
        if still:
            self.policy.ran(key, elapsed)
        return still

    def yield_reading(self) -> None:
        """From a request running inline that is about to wait for the peer: let another
        thread read (the answer can only come through a reader). No-op elsewhere."""
        if threading.current_thread() is not self._reader:
            return
        with self._lock:
            thread = self._displace_locked() if self._running else None
        if thread is not None:
            thread.start()

    def _displace_locked(self) -> threading.Thread | None:
        if self._closed or self._displaced >= self._max_displaced:
            return None
        self._displaced += 1
        self._running = False
        self.policy.stalled(self._key)
        return self._new_reader_locked()

    # -- the watch thread ----------------------------------------------------------------

    def _watch_loop(self) -> None:
        late = 0
        with self._lock:
            seen = self._seq
            while not self._closed:
                began = time.monotonic()
                self._wake.wait(WATCH_TICK)
                if self._closed:
                    break
                if self._seq != seen:
                    seen = self._seq  # progress since the last tick
                    late = 0
                    continue
                if (self._running and time.monotonic() - began > SLOW_RUN
                        and late < MAX_LATE_TICKS and not self._retry):
                    # This thread itself woke far too late: the process (or the machine)
                    # is starved, and the run may merely have been waiting its turn too.
                    # (Not for a try of a key known to be slow: it most likely is.)
                    late += 1
                    continue
                late = 0
                if self._running:  # the same run for a whole tick: displace it
                    thread = self._displace_locked()
                    if thread is not None:
                        logger.debug("%s: a request ran inline for over %s s; %s reads now",
                                     self._name, WATCH_TICK, thread.name)
                        thread.start()  # quick; the new thread never needs this lock first
                    continue
                # Nothing ran for a tick: park until the next inline run.
                self._parked = True
                while self._parked and not self._closed:
                    self._wake.wait()
                seen = self._seq

    # -- shutdown ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the watch thread (readers end with the transport)."""
        with self._lock:
            self._closed = True
            self._parked = False
            self._wake.notify_all()

    def join(self, deadline: float) -> None:
        """Join every reader thread (displaced ones included) and the watch thread, until
        ``deadline`` (``time.monotonic()``)."""
        with self._lock:
            threads = list(self._threads)
            if self._watch is not None:
                threads.append(self._watch)
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def displaced(self) -> int:
        """Displaced reader threads still running their request."""
        with self._lock:
            return self._displaced
