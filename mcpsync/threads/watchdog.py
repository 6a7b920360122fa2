"""One thread that ends waits at their deadlines: :class:`Watchdog`.

Some waits cannot be given a deadline from the inside: a blocking ``recv`` inside urllib3
that a peer feeds one byte every half second never times out, because each byte restarts
its per-read timeout. Such a wait is ended from the *outside*: at its deadline, a short
callback shuts its socket down, and the blocked read returns at once. :class:`Watchdog`
runs those callbacks. One thread serves every alarm of the process (a heap of deadlines),
started on the first alarm and gone after ``idle`` seconds with none, so an idle process
has no watchdog thread.

Callbacks run on the watchdog's thread, outside its lock, one after the other: they must
be short and must not block (shutting a socket down is what they are for). A callback that
raises is logged and the watchdog goes on.

Thread-safe.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["WATCHDOG", "Alarm", "Watchdog"]

#: Its name from before the watchdog moved here: logging set up for it still sees it.
logger = logging.getLogger("mcpsync.engine.watchdog")

#: Seconds the thread stays with no alarm before it ends (a new alarm starts another).
IDLE_SECONDS: Final = 30.0


class Alarm:
    """A callback due at ``at`` (``time.monotonic()``). :meth:`cancel` it when the wait
    it guards has ended by itself."""

    __slots__ = ("_callback", "_owner", "at", "cancelled", "fired")

    def __init__(self, owner: Watchdog, at: float, callback: Callable[[], None]) -> None:
        self._owner = owner
        self._callback: Callable[[], None] | None = callback
        self.at = at
        self.cancelled = False
        self.fired = False

    def cancel(self) -> None:
        """Do not run the callback (a no-op once it has run). Cheap: the entry leaves the
        heap lazily, and the heap is compacted when most of it is cancelled."""
        if not self.cancelled and not self.fired:
            self._owner._cancelled(self)


class Watchdog:
    """Runs each armed callback once, at its time, on one named daemon thread."""

    def __init__(self, name: str = "mcpsync-watchdog", idle: float = IDLE_SECONDS) -> None:
        self.name = name
        self.idle = idle
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._dead = 0  # cancelled entries still in the heap
        self._thread: threading.Thread | None = None

    def arm(self, at: float, callback: Callable[[], None]) -> Alarm:
        """Run ``callback`` at ``at`` (``time.monotonic()``) unless cancelled first."""
        alarm = Alarm(self, at, callback)
        with self._cond:
            earliest = not self._heap or at < self._heap[0][0]
            heapq.heappush(self._heap, (at, next(self._order), alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name,
                                                daemon=True)
                self._thread.start()
            elif earliest:
                self._cond.notify()
        return alarm

    def pending(self) -> int:
        """Alarms armed and neither run nor cancelled (for tests and metrics)."""
        with self._cond:
            return len(self._heap) - self._dead

    def _cancelled(self, alarm: Alarm) -> None:
        with self._cond:
            if alarm.cancelled or alarm.fired:
                return
            alarm.cancelled = True
            alarm._callback = None
            self._dead += 1
            if self._dead > 64 and self._dead * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._dead = 0

    def _run(self) -> None:
        while True:
            due: list[Callable[[], None]] = []
            with self._cond:
                while not due:
                    now = time.monotonic()
                    while self._heap and (self._heap[0][2].cancelled
                                          or self._heap[0][0] <= now):
                        _, _, alarm = heapq.heappop(self._heap)
                        if alarm.cancelled:
                            self._dead -= 1
                            continue
                        alarm.fired = True
                        if alarm._callback is not None:
                            due.append(alarm._callback)
                            alarm._callback = None
                    if due:
                        break
                    if not self._heap:
                        self._cond.wait(self.idle)
                        if not self._heap:
                            self._thread = None
                            return
                    else:
                        self._cond.wait(self._heap[0][0] - now)
            for callback in due:
                try:
                    callback()
                except Exception:
                    logger.exception("a watchdog callback failed")


#: The process's watchdog.
WATCHDOG: Final = Watchdog()
