"""Who reads a client's stream now: its reader thread, or a caller reading its own answer.

Why: over stdio, an answer that comes through the reader thread costs two thread wake-ups
and a GIL hand-over per call: the reader wakes for the answer, then wakes the caller. A
caller that reads its answer itself costs one wake-up (its own, from ``poll``): a third
less client CPU per call (``benchmarks/client.py``: 36 against 54 µs). So while calls follow one
another, the connection's reader thread *lends* the stream to its callers:

* The reader thread lends the stream when nothing is pending and no message it read waits
  to be taken (:meth:`ReadRole.lend`). It then parks on a condition, not on the stream.
* A caller whose request is sent takes the stream when nobody holds it (:meth:`take`,
  never waiting), reads and routes every message until its own answer has been routed or
  its deadline passed, and gives it back (:meth:`give_back`). What it reads for others
  (notifications, other callers' answers, the server's own requests) is routed exactly as
  the reader thread routes it: the same ``Connection._take``. A caller that finds the
  stream held waits for its answer as before.
* The reader thread takes the stream back when a whole :data:`GRACE` passed in which no
  caller took it, at once when a caller gives it back while other calls still wait (or
  messages wait to be taken), and when the connection closes.

So in a loop of calls the reader thread wakes once per grace, not once per call; after the
loop, a message the server sends unasked (a notification, a ``ping``) waits at most two
graces to be read. Whether anything waits is decided under this object's lock, after the
caller registered its request, so an answer can never be left with nobody reading.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

#: How long the reader thread leaves the stream to callers after the last one took it
#: (seconds): the bound on how late an unasked message is read once calls stop.
GRACE: Final = 0.01
#: A caller reading its own answer looks at most this long (seconds) at the stream before
#: it checks again whether its call is still pending (cancelled by another thread, say).
CALLER_SLICE: Final = 0.05

_READER: Final = "reader"  # a caller holds it as its thread's ident (an int)


class ReadRole:
    """The one permission to read a connection's stream. Thread-safe."""

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
