"""How :meth:`Client.listen <mcpsync.Client.listen>` opens a subscription in each era.

Under 2026-07-28 a subscription is one ``subscriptions/listen`` request left open; in the
handshake era it is made of the session's ``list_changed`` notifications and
``resources/subscribe``. Both end up as a :class:`~mcpsync.client.listen.Subscription`
(``listen.py`` holds it and the routing of its notifications); the opening, which differs
per era, is here, apart from the API in ``client.py``.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionClosedError, RequestCancelledError, RequestTimeoutError
from .listen import Subscription, SubscriptionCallback

if TYPE_CHECKING:
    from .client import Client


def listen_modern(client: Client, envelope: dict[str, Any], wanted: dict[str, Any],
                  on_notification: SubscriptionCallback | None,
                  wait: float) -> Subscription:
    """2026-07-28: a ``subscriptions/listen`` request that stays open until the
    subscription is closed; returns once the server acknowledged it (within ``wait``)."""
    params = {"notifications": wanted,
              "_meta": dict(envelope)}
    request_id = client._connection.new_request_id()
    subscription = Subscription(
        request_id, wanted,
        lambda: client._connection.cancel_request(request_id, "subscription closed"),
        on_notification, client._connection.name)
    client._listens.add(subscription)
    try:
        _, future = client._connection.begin_request(
            "subscriptions/listen", params, request_id=request_id, ordered=True)
    except BaseException:
        client._listens.pop(request_id)
        subscription._finish(ConnectionClosedError("not sent"))
        raise
    future.add_done_callback(lambda done: _listen_ended(client, request_id, done))
    if not subscription.wait_acknowledged(wait):
        if subscription.error is not None:
            raise subscription.error
        subscription.close()
        raise RequestTimeoutError(f"subscriptions/listen not acknowledged in {wait} s")
    return subscription


def _listen_ended(client: Client, request_id: Any, done: Future[dict[str, Any]]) -> None:
    subscription = client._listens.pop(request_id)
    if subscription is None:
        return
    error = done.exception()
    by_server = error is None
    if isinstance(error, RequestCancelledError):
        error = None  # closed here
    subscription._finish(error, by_server=by_server)


def listen_handshake(client: Client, wanted: dict[str, Any],
                     on_notification: SubscriptionCallback | None,
                     wait: float) -> Subscription:
    """The handshake era: the session's list_changed notifications the server declares, and
    ``resources/subscribe`` for the wanted URIs (counted across subscriptions)."""
    caps = client.server_capabilities
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
        with client._subscribe_lock:
            for uri in client._listens.remove_legacy(holder[0], uris):
                if not client.closed:
                    client.unsubscribe(uri, timeout=wait)

    subscription = Subscription(None, wanted, closer, on_notification,
                                client._connection.name)
    holder.append(subscription)
    subscription._acknowledge(granted)
    try:
        with client._subscribe_lock:
            for uri in client._listens.add_legacy(subscription, uris):
                client.subscribe(uri, timeout=wait)
    except BaseException:
        subscription.close()
        raise
    return subscription
