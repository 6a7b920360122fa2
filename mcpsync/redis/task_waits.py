"""Waiting on a task in the Redis task store: ``wait`` and the one listener that wakes it.

Every write publishes the task's id on ``<prefix>:tasks:changed``; one named thread per
store and process (``mcpsync-redis-task-listener``, started by the first ``wait``) follows
that channel and wakes this process's waiters on the id. A waiter re-checks its task's
plain fields when woken and at least every :data:`WAIT_POLL` (pub/sub is at most once),
and reads the payload once, when the wait ends. The whole wait has one budget: its
``timeout`` (or a request's sooner deadline), plus :data:`WAIT_GRACE` for the last read.
A layer between the dead-runner handling (:mod:`mcpsync.redis.task_runners`), whose
reads it uses, and the store (:mod:`mcpsync.redis.tasks`), which inherits it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Final

from ..protocol.deadline import Deadline, current
from ..protocol.decoding import utf8_encodable
from ..stores.tasks import TaskRecord
from .client import follow_channel, unavailable
from .task_records import _expires_at, _text
from .task_runners import RunnerTracking

log = logging.getLogger("mcpsync.redis.tasks")

#: ``wait`` re-reads the task at least this often (seconds) even if no change was
#: published (a message lost while the listener reconnected).
WAIT_POLL: Final = 1.0
#: Seconds past its ``timeout`` that ``wait`` may take for the read that ends it.
WAIT_GRACE: Final = 1.0
#: Longest ``wait`` waits for the listener's subscription before reading anyway.
LISTEN_TIMEOUT: Final = 7.0


class TaskWaits(RunnerTracking):
    """``wait`` over the store's change channel (see the module)."""

    def wait(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        """Block until the task's version passes ``after_version``, it is gone, or
        ``timeout`` (or the ambient deadline, a request's) ends. One budget for the whole
        wait: the listener's subscription and every read take what is left of it (plus
        :data:`WAIT_GRACE` for the read that ends it), each read at most
        :attr:`call_timeout`; a Redis that stops answering makes it raise
        ``StoreUnavailableError`` by then, never later."""
        self._check()
        timeout = max(0.0, timeout)
        outer = current()  # a request's deadline: end with it, as on a timeout, not after
        if outer is not None and outer.bounded:
            left = outer.remaining() - WAIT_GRACE
            if left <= 0 < timeout:  # spent: say so at once (a caller's loop must not spin)
                with unavailable(self._redis, "waiting on a task"):
                    raise outer.exceeded()
            timeout = min(timeout, max(0.0, left))
        if not utf8_encodable(task_id):
            return None  # no such task can exist (see create)
        ends = time.monotonic() + timeout
        slept = 0.0  # also counted, so a frozen clock (in tests) cannot make this endless
        whole = Deadline(None if math.isinf(timeout) else timeout + WAIT_GRACE,
                         "the task store (waiting on a task)")
        event = threading.Event()
        with self._lock:
            self._watchers.setdefault(task_id, set()).add(event)
        try:
            with unavailable(self._redis, "waiting on a task"), whole.applied():
                self._listen(whole)
                while True:
                    event.clear()
                    with whole.within(self.call_timeout).applied():
                        record = self._glance(task_id)  # the payload is read once, below
                    if record is None or record.version > after_version:
                        break
                    step = min(ends - time.monotonic(), timeout - slept, WAIT_POLL)
                    expires = _expires_at(record)
                    if expires is not None:  # wake when it expires, too
                        step = min(step, max(expires - time.time(), 0.001))
                    if step <= 0:
                        break
                    if not event.wait(step):
                        slept += step
                entry = None
                if record is not None:
                    with whole.within(self.call_timeout).applied():
                        entry = self._load(task_id)
        finally:
            with self._lock:
                events = self._watchers.get(task_id)
                if events is not None:
                    events.discard(event)
                    if not events:
                        del self._watchers[task_id]
        return None if entry is None else entry.decode()

    def _listen(self, deadline: Deadline) -> None:
        """Start the listener (once per store and process) and wait until it is
        subscribed, so a change published after this returns is not missed; at most what
        is left of the waiter's ``deadline`` or :data:`LISTEN_TIMEOUT`, and not while
        Redis is known to be away (the caller's own read then fails at once)."""
        with self._lock:
            if self._listener is None and not self._closed:
                self._listener = threading.Thread(target=self._run_listener, daemon=True,
                                                  name="mcpsync-redis-task-listener")
                self._listener.start()
            listening = self._listening
        bound = min(deadline.remaining(), LISTEN_TIMEOUT)
        for _ in range(math.ceil(bound / 0.05)):  # its own flags, not Redis, are what is polled
            if self._listener_down or listening.wait(0.05):
                return

    def _run_listener(self) -> None:
        """Wake this process's waiters on every change published by any process."""
        listening = self._listening

        def up() -> None:
            listening.set()
            self._listener_down = False

        def down() -> None:
            listening.clear()
            self._listener_down = True

        follow_channel(self._redis, self._keys.channel, self._stop,
                       deliver=lambda data: self._wake(_text(data)), up=up, down=down,
                       log=log, what="task store listener", poll=0.5)
        listening.set()  # closing: nobody waits for a subscription any more
