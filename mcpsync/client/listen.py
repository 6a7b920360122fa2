"""The client side of ``subscriptions/listen``: :class:`Subscription` and its demultiplexer.

Under 2026-07-28 each :meth:`Client.listen <mcpsync.client.Client.listen>` is one open
``subscriptions/listen`` request; the notifications that carry its id in
``_meta["io.modelcontextprotocol/subscriptionId"]`` are routed to it, whatever else shares
the connection. In the handshake era there is no such request: a subscription then
follows the session's own list_changed notifications (as far as the server declared
``listChanged``) and ``resources/subscribe`` for its URIs, so one program works in both
eras.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from ..errors import MCPSyncError
from ..protocol.versions import ACKNOWLEDGED, LIST_FIELDS, META_SUBSCRIPTION_ID, uri_covers

logger = logging.getLogger("mcpsync.client")

#: The notifications a subscription carries, by the filter field that asks for them.
_LIST_METHODS: Final = {f"notifications/{kind}/list_changed": field
                        for field, kind in LIST_FIELDS.items()}
_UPDATED: Final = "notifications/resources/updated"
_END = object()

#: Notifications a subscription holds for a consumer that does not keep up, at most; past
#: it new ones are dropped (counted in ``Subscription.dropped``; a warning at the first
#: drop and at every 1000th).
MAX_BACKLOG: Final = 1000


@dataclass(frozen=True)
class SubscriptionNotification:
    """One notification delivered on a subscription."""

    method: str
    params: dict[str, Any]

    @property
    def uri(self) -> str | None:
        """The URI of a ``notifications/resources/updated``; None for list changes."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


SubscriptionCallback = Callable[[SubscriptionNotification], None]


class Subscription:
    """An open subscription: iterate it, :meth:`get` with a timeout, or give callbacks.

    ``for note in subscription`` blocks for each notification and ends when the
    subscription does (closed here, ended by the server, or the connection closed).
    :meth:`close` (or leaving the ``with`` block) cancels it. Thread-safe.
    """

    def __init__(self, subscription_id: Any, requested: dict[str, Any],
                 closer: Callable[[], object], on_notification: SubscriptionCallback | None,
                 name: str) -> None:
        #: The id of the ``subscriptions/listen`` request (None in the handshake era).
        self.id = subscription_id
        #: The filter that was asked for (``SubscriptionFilter`` wire shape).
        self.requested = requested
        #: The filter the server agreed to honour, once acknowledged.
        self.acknowledged: dict[str, Any] | None = None
        #: Why it ended, when the server answered with an error or the connection closed.
        self.error: BaseException | None = None
        #: True when the server ended it gracefully (a ``complete`` answer).
        self.ended_by_server = False
        self._closer = closer
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._backlog = 0
        #: Notifications dropped because :data:`MAX_BACKLOG` were waiting unread.
        self.dropped = 0
        self._settled = threading.Event()
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._closing = False
        self._thread: threading.Thread | None = None
        if on_notification is not None:
            self._thread = threading.Thread(target=self._run, args=(on_notification,),
                                            name=f"{name}-listen-{subscription_id}",
                                            daemon=True)
            self._thread.start()

    # -- consuming ------------------------------------------------------------------------

    def __iter__(self) -> Iterator[SubscriptionNotification]:
        return self

    def __next__(self) -> SubscriptionNotification:
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # every later call sees the end too
            raise StopIteration
        return self._taken(item)

    def get(self, timeout: float | None = None) -> SubscriptionNotification | None:
        """The next notification, waiting at most ``timeout`` seconds (None: no bound).
        None when none arrived in time or the subscription is over (see :attr:`active`)."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is _END:
            self._queue.put(_END)
            return None
        return self._taken(item)

    def _taken(self, item: object) -> SubscriptionNotification:
        assert isinstance(item, SubscriptionNotification)
        with self._lock:
            self._backlog -= 1
        return item

    @property
    def active(self) -> bool:
        """False once the subscription has ended, for whatever reason."""
        return not self._ended.is_set()

    def wait_ended(self, timeout: float | None = None) -> bool:
        """Block until the subscription ends; False when ``timeout`` passes first."""
        return self._ended.wait(timeout)

    def wait_acknowledged(self, timeout: float | None = None) -> bool:
        """Block until the server acknowledged it (True) or it ended or timed out (False)."""
        self._settled.wait(timeout)
        return self.acknowledged is not None

    def close(self) -> None:
        """Cancel the subscription (``notifications/cancelled`` to the server). Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if not self._ended.is_set():
            try:
                self._closer()
            except MCPSyncError as exc:
                logger.debug("closing subscription %r: %s", self.id, exc)
        self._finish()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "active" if self.active else "ended"
        return f"<Subscription {self.id!r} {state} acknowledged={self.acknowledged!r}>"

    # -- fed by the client ----------------------------------------------------------------

    def _acknowledge(self, granted: dict[str, Any]) -> None:
        self.acknowledged = granted
        self._settled.set()

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        if self._ended.is_set():
            return
        with self._lock:
            full = self._backlog >= MAX_BACKLOG
            if full:
                self.dropped += 1
            else:
                self._backlog += 1
            warn = full and self.dropped % MAX_BACKLOG == 1  # the first, then every 1000th
        if full:
            if warn:
                logger.warning("subscription %r: %d notifications are unread; dropping new "
                               "ones (%d so far)", self.id, MAX_BACKLOG, self.dropped)
            return
        self._queue.put(SubscriptionNotification(method, params))

    def _finish(self, error: BaseException | None = None, *, by_server: bool = False) -> None:
        with self._lock:
            if self._ended.is_set():
                return
            self.error = error
            self.ended_by_server = by_server
            self._ended.set()
        self._settled.set()
        self._queue.put(_END)

    def _run(self, callback: SubscriptionCallback) -> None:
        for note in self:
            try:
                callback(note)
            except Exception:
                logger.exception("subscription callback failed")

    # -- what a handshake-era subscription follows --------------------------------------

    def _follows(self, method: str, params: dict[str, Any]) -> bool:
        granted = self.acknowledged or {}
        field = _LIST_METHODS.get(method)
        if field is not None:
            return bool(granted.get(field))
        if method == _UPDATED:
            uri = params.get("uri")
            return isinstance(uri, str) and any(
                uri_covers(sub, uri) for sub in granted.get("resourceSubscriptions") or ())
        return False


class Listens:
    """The client's open subscriptions, for routing notifications. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[Any, Subscription] = {}
        self._legacy: list[Subscription] = []
        self._uri_counts: dict[str, int] = {}

    def add(self, subscription: Subscription) -> None:
        with self._lock:
            self._by_id[subscription.id] = subscription

    def pop(self, subscription_id: Any) -> Subscription | None:
        with self._lock:
            return self._by_id.pop(subscription_id, None)

    def add_legacy(self, subscription: Subscription, uris: list[str]) -> list[str]:
        """Register a handshake-era subscription; returns the URIs not yet subscribed."""
        with self._lock:
            self._legacy.append(subscription)
            fresh = [u for u in uris if self._uri_counts.get(u, 0) == 0]
            for uri in uris:
                self._uri_counts[uri] = self._uri_counts.get(uri, 0) + 1
            return fresh

    def remove_legacy(self, subscription: Subscription, uris: list[str]) -> list[str]:
        """Forget one; returns the URIs no other subscription still follows."""
        with self._lock:
            if subscription not in self._legacy:
                return []
            self._legacy.remove(subscription)
            stale = []
            for uri in uris:
                self._uri_counts[uri] -= 1
                if self._uri_counts[uri] == 0:
                    del self._uri_counts[uri]
                    stale.append(uri)
            return stale

    def route(self, method: str, params: dict[str, Any]) -> bool:
        """Hand a notification to its subscription(s). True when it belonged to a
        2026-07-28 subscription (and to nobody else)."""
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_SUBSCRIPTION_ID in meta:
            with self._lock:
                subscription = self._by_id.get(meta[META_SUBSCRIPTION_ID])
            if subscription is None:
                logger.debug("notification for unknown subscription %r",
                             meta[META_SUBSCRIPTION_ID])
                return True
            if method == ACKNOWLEDGED:
                granted = params.get("notifications")
                subscription._acknowledge(granted if isinstance(granted, dict) else {})
            else:
                if subscription.acknowledged is None:
                    logger.warning("subscription %r: %s before its acknowledgement",
                                   subscription.id, method)
                subscription._deliver(method, params)
            return True
        with self._lock:
            legacy = list(self._legacy)
        for subscription in legacy:
            if subscription._follows(method, params):
                subscription._deliver(method, params)
        return False

    def all(self) -> list[Subscription]:
        with self._lock:
            return [*self._by_id.values(), *self._legacy]


__all__ = ["Subscription", "SubscriptionCallback", "SubscriptionNotification"]
