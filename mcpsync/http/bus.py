"""The bus between the workers of one deployment, in one process: :class:`InProcessBus`.

The :class:`Bus` protocol itself is :mod:`mcpsync.protocol.bus` (imported here too, where
it has always been importable from). A bus is a doorbell and a messenger, never a store:
delivery is at most once and only to workers listening at that moment. Whatever must not
be lost is written to a store first (the event store holds a session's stream; the task
store holds tasks), and the bus only says "look now". What the relays send on it:

* a client's answer to a server request (elicitation, sampling, roots) that reached
  another worker than the one waiting for it;
* ``notifications/cancelled`` for a request running on another worker;
* "new events on stream K", for the worker that holds (or follows) that stream;
* a changed log level, a session ended by ``DELETE``;
* server-wide changes (a resource updated, a list changed, a task's status) for the
  2026-07-28 ``subscriptions/listen`` streams held by every worker.

Implementations: :class:`InProcessBus` (apps in one process: tests, several mounts) and
``mcpsync.redis.RedisBus`` (Redis pub/sub, many machines).
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections import deque
from collections.abc import Callable

from ..errors import StoreUnavailableError
from ..protocol.bus import Bus as Bus
from ..protocol.bus import BusMessage as BusMessage

logger = logging.getLogger("mcpsync.http")

#: Messages an :class:`InProcessBus` holds for its dispatcher thread, at most (count, and
#: bytes of their JSON: a relayed answer may be as large as a request body).
DEFAULT_MAX_QUEUED = 10_000
DEFAULT_MAX_QUEUED_BYTES = 64 * 1024 * 1024
_names = itertools.count(1)


class MessageQueue:
    """Bus messages waiting for one consumer thread, bounded in count and in bytes: past
    either bound the oldest are dropped (a bus is at most once; what must not be lost is
    in a store). Thread-safe. Used by :class:`InProcessBus` and by each app's relay."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[tuple[BusMessage, int]] = deque()
        self._bytes = 0
        self.closed = False
        #: Messages dropped so far.
        self.dropped = 0

    def put(self, message: BusMessage, size: int) -> tuple[bool, bool]:
        """Queue ``message`` (``size`` bytes); returns (queued, time to warn about drops):
        not queued once closed; a warning is due at the first drop and every 1000th."""
        warn = False
        with self._cond:
            if self.closed:
                return False, False
            while self._queue and (len(self._queue) >= self.max_items
                                   or self._bytes + size > self.max_bytes):
                self._bytes -= self._queue.popleft()[1]
                self.dropped += 1
                warn = warn or self.dropped == 1 or self.dropped % 1000 == 0
            self._queue.append((message, size))
            self._bytes += size
            self._cond.notify()
        return True, warn

    def get(self) -> BusMessage | None:
        """The oldest message, waiting for one; ``None`` once closed."""
        with self._cond:
            while not self._queue and not self.closed:
                self._cond.wait()
            if self.closed:
                return None
            message, size = self._queue.popleft()
            self._bytes -= size
            return message

    def close(self) -> None:
        """Drop what is queued; :meth:`get` returns ``None`` from now on."""
        with self._cond:
            self.closed = True
            self._queue.clear()
            self._bytes = 0
            self._cond.notify_all()


class InProcessBus:
    """A :class:`Bus` between the apps of one process: several ``wsgi_app`` mounts of one
    deployment, and the tests, which run two "workers" side by side.

    ``publish`` only queues (it never runs a callback on the publisher's thread, which may
    hold a session's write lock); one named dispatcher thread hands each message to every
    subscriber in publish order. The queue is bounded (``max_queued`` messages): when a
    slow subscriber lets it fill up, the oldest message is dropped with a warning (the bus
    is at most once by contract; what must not be lost is in a store). It is bounded in
    messages (``max_queued``) and in bytes of their JSON (``max_queued_bytes``); a message
    must be JSON (``ValueError`` otherwise), as it would be on a real bus. A callback that
    raises is logged and the thread goes on. ``close`` stops the thread and joins it."""

    def __init__(self, *, max_queued: int = DEFAULT_MAX_QUEUED,
                 max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES) -> None:
        if max_queued < 1 or max_queued_bytes < 1:
            raise ValueError("max_queued and max_queued_bytes must be at least 1")
        self.max_queued = max_queued
        self.max_queued_bytes = max_queued_bytes
        self._queue = MessageQueue(max_queued, max_queued_bytes)
        self._lock = threading.Lock()
        self._subscribers: dict[int, Callable[[BusMessage], None]] = {}
        self._ids = itertools.count(1)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"mcpsync-bus-{next(_names)}")
        self._thread.start()

    def publish(self, message: BusMessage) -> None:
        if not isinstance(message.get("kind"), str):
            raise ValueError('a bus message needs a "kind" string')
        # As it would travel: JSON (a copy, so the publisher cannot change it afterwards).
        text = json.dumps(message)
        queued, warn = self._queue.put(json.loads(text), len(text))
        if not queued:
            raise StoreUnavailableError("the bus is closed")
        if warn:
            logger.warning("in-process bus: a slow subscriber filled the queue (%d messages, "
                           "%d bytes); %d dropped so far, oldest first", self.max_queued,
                           self.max_queued_bytes, self.dropped)

    def subscribe(self, callback: Callable[[BusMessage], None]) -> Callable[[], None]:
        with self._lock:
            if self._queue.closed:
                raise StoreUnavailableError("the bus is closed")
            key = next(self._ids)
            self._subscribers[key] = callback

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.pop(key, None)

        return unsubscribe

    def close(self, timeout: float = 5.0) -> None:
        self._queue.close()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def closed(self) -> bool:
        return self._queue.closed

    @property
    def dropped(self) -> int:
        """Messages dropped so far (a slow subscriber let the queue fill up)."""
        return self._queue.dropped

    def _run(self) -> None:
        while (message := self._queue.get()) is not None:
            with self._lock:
                callbacks = list(self._subscribers.values())
            for callback in callbacks:  # outside the lock: a callback may publish
                try:
                    callback(message)
                except Exception:
                    logger.exception("in-process bus: a subscriber failed on %r",
                                     message.get("kind"))


__all__ = ["Bus", "BusMessage", "InProcessBus", "MessageQueue"]
