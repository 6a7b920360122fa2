"""How :meth:`Client.listen <mcpsync.Client.listen>` opens a subscription in each era.

Under 2026-07-28 a subscription is one ``subscriptions/listen`` request left open; in the
handshake era it is made of the session's ``list_changed`` notifications and
``resources/subscribe``. Both end up as a :class:`~mcpsync.client.listen.Subscription`
(``listen.py`` holds it and the routing of its notifications); the opening, which differs
per era, is :class:`Subscriptions`, which never sees the ``Client`` that composes it.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from ..engine.connection import Connection
from ..errors import ConnectionClosedError, RequestCancelledError, RequestTimeoutError
from ..protocol.deadline import budget_text
from .calls import Calls, raw
from .listen import Listens, Subscription, SubscriptionCallback
from .negotiate import Negotiation


class Subscriptions:
    """One client's open subscriptions, in either era. Thread-safe: the handshake era's
    counts of subscribed URIs change under a lock held across the ``resources/subscribe``
    (or unsubscribe) they call for, so the server applies them in the order the counts
    changed."""

    def __init__(self, connection: Connection, listens: Listens, calls: Calls,
                 negotiation: Negotiation) -> None:
        self._connection = connection
        self._listens = listens
        self._calls = calls
        self._negotiation = negotiation
        self._lock = threading.Lock()

    def open(self, wanted: dict[str, Any], on_notification: SubscriptionCallback | None,
             wait: float) -> Subscription:
        """A subscription to ``wanted``, in the era spoken; returns once acknowledged."""
        envelope = self._negotiation.envelope
        if envelope is None:
            return self._open_handshake(wanted, on_notification, wait)
        return self._open_modern(envelope, wanted, on_notification, wait)

    def close_all(self, error: BaseException) -> None:
        """End every subscription (the client is closing)."""
        for subscription in self._listens.all():
            subscription._finish(error)

    def _open_modern(self, envelope: dict[str, Any], wanted: dict[str, Any],
                     on_notification: SubscriptionCallback | None,
                     wait: float) -> Subscription:
        """2026-07-28: a ``subscriptions/listen`` request that stays open until the
        subscription is closed; returns once the server acknowledged it (within ``wait``)."""
        connection = self._connection
        params = {"notifications": wanted, "_meta": dict(envelope)}
        request_id = connection.new_request_id()
        subscription = Subscription(
            request_id, wanted,
            lambda: connection.cancel_request(request_id, "subscription closed"),
            on_notification, connection.name)
        self._listens.add(subscription)
        try:
            _, future = connection.begin_request(
                "subscriptions/listen", params, request_id=request_id, ordered=True)
        except BaseException:
            self._listens.pop(request_id)
            subscription._finish(ConnectionClosedError("not sent"))
            raise
        future.add_done_callback(lambda done: self._ended(request_id, done))
        if not subscription.wait_acknowledged(wait):
            if subscription.error is not None:
                raise subscription.error
            subscription.close()
            raise RequestTimeoutError("subscriptions/listen not acknowledged in "
                                      f"{budget_text(wait)}")
        return subscription

    def _ended(self, request_id: Any, done: Future[dict[str, Any]]) -> None:
        subscription = self._listens.pop(request_id)
        if subscription is None:
            return
        error = done.exception()
        by_server = error is None
        if isinstance(error, RequestCancelledError):
            error = None  # closed here
        subscription._finish(error, by_server=by_server)

    def _open_handshake(self, wanted: dict[str, Any],
                        on_notification: SubscriptionCallback | None,
                        wait: float) -> Subscription:
        """The handshake era: the session's list_changed notifications the server
        declares, and ``resources/subscribe`` for the wanted URIs (counted across
        subscriptions)."""
        init = self._negotiation.init
        caps = init.capabilities if init is not None else {}
        granted: dict[str, Any] = {field: True for field, kind in (
            ("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"))
            if wanted.get(field) and (caps.get(kind) or {}).get("listChanged")}
        uris: list[str] = []
        if "resourceSubscriptions" in wanted and (caps.get("resources") or {}).get("subscribe"):
            uris = list(wanted["resourceSubscriptions"])
            granted["resourceSubscriptions"] = uris
        holder: list[Subscription] = []

        def closer() -> None:
            with self._lock:
                for uri in self._listens.remove_legacy(holder[0], uris):
                    if not self._connection.closed:
                        self._ask("resources/unsubscribe", uri, wait)

        subscription = Subscription(None, wanted, closer, on_notification,
                                    self._connection.name)
        holder.append(subscription)
        subscription._acknowledge(granted)
        try:
            with self._lock:
                for uri in self._listens.add_legacy(subscription, uris):
                    self._ask("resources/subscribe", uri, wait)
        except BaseException:
            subscription.close()
            raise
        return subscription

    def _ask(self, method: str, uri: str, wait: float) -> None:
        self._calls.send(method, {"uri": uri}, wait, None, None, True, raw)
