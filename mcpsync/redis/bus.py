"""The relay between workers on many machines: the :class:`~mcpsync.http.bus.Bus` protocol
over Redis pub/sub.

``RedisBus(client)`` publishes each message as compact JSON on one channel
(``<prefix>:<channel>``) and delivers what arrives there to its subscribers, on one named
listener thread per bus (started by the first ``subscribe``, joined by ``close``). What
it promises, and why:

* **At most once, to whoever listens now**: pub/sub keeps nothing. A bus is a doorbell;
  what must not be lost is written to a store first (see :mod:`mcpsync.http.bus`).
* **In publish order per publisher**: Redis delivers the messages of one connection in
  order, and a publisher's consecutive ``publish`` calls reach Redis in the order made.
  Every bus, the publisher's own included, sees the same sequence from it.
* **Never hangs**: ``publish`` raises :class:`~mcpsync.errors.StoreUnavailableError` when
  Redis cannot be reached, within the budget in force: the request's (``wsgi_app(
  store_budget=)``) when it publishes for one, else 5 s of its own (see
  :mod:`mcpsync.redis.budget`). The listener's steps are bounded the same way, so
  ``close`` ends it in time even while Redis is stopped.
* **Survives Redis going away**: the listener reconnects with a backoff doubling from
  50 ms to :data:`RECONNECT_MAX`, logs the outage once (and once when Redis is back, not
  per retry), and resumes delivering; messages published during the outage are lost.
* **A bad message or a bad callback harms nothing else**: a payload that is not a JSON
  object (or is larger than ``max_message_bytes``) is logged and skipped; a callback that
  raises is logged, and the other callbacks and later messages are still delivered.
  Repeated faults are logged once per :data:`LOG_EVERY` seconds with a count.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import redis

from ..http.bus import BusMessage
from .client import (
    DEFAULT_CALL_BUDGET,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_SOCKET_TIMEOUT,
    RECONNECT_MAX,
    connect,
    follow_channel,
    unavailable,
)

__all__ = ["MAX_BUS_MESSAGE_BYTES", "MAX_SUBSCRIBERS", "RECONNECT_MAX", "RedisBus"]

log = logging.getLogger("mcpsync.redis.bus")

#: The largest message (its compact JSON, in bytes) a bus publishes or delivers: the bus
#: carries doorbells and small answers, never bulk data (that goes through a store).
MAX_BUS_MESSAGE_BYTES: Final = 1024 * 1024
#: Callbacks one bus holds at once; ``subscribe`` beyond it raises ``RuntimeError``.
MAX_SUBSCRIBERS: Final = 10_000
#: A repeated fault (malformed messages, raising callbacks) is logged at most this often.
LOG_EVERY: Final = 60.0
#: Seconds ``close()`` waits for the listener thread.
JOIN_TIMEOUT: Final = 10.0
#: How long the listener blocks for a message before it checks whether it is closing.
_POLL: Final = 0.2


class _Throttled:
    """A warning logged at first, then at most once per :data:`LOG_EVERY` seconds with how
    many were left out: a peer flooding the channel cannot flood the log."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.skipped = 0
        self.last = -LOG_EVERY

    def __call__(self, detail: str, *, exc_info: bool = False) -> None:
        now = time.monotonic()
        if now - self.last < LOG_EVERY:
            self.skipped += 1
            return
        more = f" ({self.skipped} more since the last report)" if self.skipped else ""
        log.warning("bus: %s: %s%s", self.what, detail, more, exc_info=exc_info)
        self.last, self.skipped = now, 0


class RedisBus:
    """A :class:`~mcpsync.http.bus.Bus` on Redis pub/sub, for workers on many machines.

    ``client`` is a :class:`redis.Redis` with socket timeouts, or a URL (the bus then makes
    and owns a client with short timeouts). Buses with the same ``prefix`` and ``channel``
    on the same Redis hear each other. ``call_budget``: seconds a publish made outside a
    request's budget (from a handler or background thread) may wait on Redis in all.
    """

    def __init__(self, client: redis.Redis | str, *, prefix: str = "mcpsync",
                 channel: str = "bus", max_message_bytes: int = MAX_BUS_MESSAGE_BYTES,
                 call_budget: float = DEFAULT_CALL_BUDGET) -> None:
        if not call_budget > 0:
            raise ValueError("call_budget must be positive")
        self._redis, self._owns_client = connect(client), not isinstance(client, redis.Redis)
        self.channel = f"{prefix}:{channel}"
        self.max_message_bytes = max_message_bytes
        #: Seconds a publish made outside a request's budget may wait on Redis.
        self.call_budget = call_budget
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[BusMessage], None]] = {}
        self._next = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._listening = threading.Event()
        self._tried = threading.Event()  # the listener's first attempt has an outcome
        self._closed = False
        self._malformed = _Throttled("a malformed message was skipped")
        self._failed = _Throttled("a subscriber raised")

    def publish(self, message: BusMessage) -> None:
        if not isinstance(message, dict):
            raise TypeError(f"a bus message is a dict (a JSON object), not {type(message)!r}")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
        if len(data) > self.max_message_bytes:
            raise ValueError(f"a bus message may be {self.max_message_bytes} bytes; this one "
                             f"is {len(data)}")
        if self._closed:
            raise RuntimeError("the bus is closed")
        with unavailable(self._redis, "publishing on the bus", self.call_budget):
            self._redis.publish(self.channel, data)

    def subscribe(self, callback: Callable[[BusMessage], None]) -> Callable[[], None]:
        with self._lock:
            if self._closed:
                raise RuntimeError("the bus is closed")
            if len(self._callbacks) >= MAX_SUBSCRIBERS:
                raise RuntimeError(f"the bus has {MAX_SUBSCRIBERS} subscribers already")
            token = self._next
            self._next += 1
            self._callbacks[token] = callback
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, daemon=True,
                                                name=f"mcpsync-redis-bus-{self.channel}")
                self._thread.start()
        # Until the listener is subscribed, so a message published after this returns is
        # delivered; or, with Redis away, until its first attempt failed (it keeps trying,
        # and delivers once Redis is back). Bounded either way.
        self._tried.wait(DEFAULT_CONNECT_TIMEOUT + DEFAULT_SOCKET_TIMEOUT)

        def unsubscribe() -> None:
            with self._lock:
                self._callbacks.pop(token, None)

        return unsubscribe

    @property
    def listening(self) -> bool:
        """Whether the listener is subscribed now (false while Redis is away)."""
        return self._listening.is_set()

    def _listen(self) -> None:
        def up() -> None:
            self._listening.set()
            self._tried.set()

        def down() -> None:
            self._listening.clear()
            self._tried.set()

        follow_channel(self._redis, self.channel, self._stop, deliver=self._deliver, up=up,
                       down=down, log=log, what=f"bus {self.channel}", poll=_POLL)

    def _deliver(self, data: Any) -> None:
        """Decode one payload and hand it to every callback (each one's failure its own)."""
        size = len(data) if isinstance(data, (bytes, str)) else 0
        if size > self.max_message_bytes:
            self._malformed(f"{size} bytes, more than {self.max_message_bytes}")
            return
        try:
            message = json.loads(data)
        except (ValueError, TypeError) as exc:
            self._malformed(f"not JSON ({exc})")
            return
        if not isinstance(message, dict):
            self._malformed(f"a JSON {type(message).__name__}, not an object")
            return
        with self._lock:
            callbacks = list(self._callbacks.values())
        for callback in callbacks:
            try:
                callback(message)
            except Exception:  # one subscriber's bug must not stop delivery to the rest
                self._failed(f"{callback!r} on a {message.get('kind')!r} message",
                             exc_info=True)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._callbacks.clear()
            self._stop.set()
            self._tried.set()
        if thread is not None and thread.ident != threading.get_ident():
            thread.join(JOIN_TIMEOUT)
        if self._owns_client:
            self._redis.close()

    def __enter__(self) -> RedisBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
