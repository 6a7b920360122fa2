"""Resource subscriptions through a proxy: the proxy is subscribed on the remote server
exactly while one of its own callers is subscribed to the URI.

The proxy's callers subscribe as usual, in either era: ``resources/subscribe`` on a
handshake-era session, ``resourceSubscriptions`` in a 2026-07-28 ``subscriptions/listen``.
Both are recorded in the proxy's :class:`~mcpsync.server.subscribers.ResourceSubscribers`,
whose watcher here keeps one subscription on the remote per URI (``Client.listen`` with
that URI, in whichever era the remote speaks). It opens the subscription when the URI gets
its first subscriber and closes it when the last one goes (an unsubscribe, the end of a
session, a listen stream closed). Each update the remote sends becomes
``notify_resource_updated`` on the proxy, which reaches the proxy's subscribers in their
era.

A caller's subscription is answered only after the remote's is in place, so no update
after the answer is missed. If the remote refuses or can't be reached, the caller's
subscription fails with that error (-32603). When the proxy connects to
the remote again (after losing it), the subscriptions still wanted are opened again on
the new connection. At most :data:`MAX_FOLLOWED` URIs are followed at once: each one is a
subscription on the remote and a delivery thread here.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Final

from ..client.client import Client
from ..client.listen import Subscription, SubscriptionNotification
from ..errors import INTERNAL_ERROR, MCPError, MCPSyncError

if TYPE_CHECKING:
    from .host import ProxyHost
    from .link import RemoteLink

logger = logging.getLogger("mcpsync.proxy")

#: URIs a proxy follows on the remote at once, at most; a subscription to one more fails.
MAX_FOLLOWED: Final = 256
#: The longest a caller subscribing to a URI waits for another thread's opening of the
#: same URI on the remote (which itself ends by the proxy client's timeout).
OPEN_WAIT: Final = 300.0


class Upstream:
    """The proxy's subscriptions on the remote, one per URI its callers subscribe to.
    Thread-safe. No lock is held while a subscription is opened on the remote, closed, or
    an update delivered: an open in progress is marked per URI (one at a time for each),
    and a caller subscribing to a URI whose remote subscription is being opened waits for
    that one (bounded), so it is answered once it is in place. Other URIs are not held up."""

    def __init__(self, server: ProxyHost, link: RemoteLink,
                 limit: int = MAX_FOLLOWED) -> None:
        self._server = server
        self._link = link
        self._limit = limit
        self._lock = threading.Lock()
        #: The subscription on the remote of each followed URI, and the client it is on.
        self._held: dict[str, tuple[Client, Subscription]] = {}
        #: URIs whose remote subscription is being opened, set when that is over.
        self._opening: dict[str, threading.Event] = {}

    def changed(self, uri: str) -> None:
        """The watcher of the proxy's subscribers: follow ``uri`` on the remote while
        someone here is subscribed to it, and only then. Raises
        :class:`~mcpsync.errors.MCPError` (-32603) when following it fails."""
        subscribers = self._server.subscribers
        while True:
            # Connecting takes the link's lock, then reconnected() takes ours: connect first.
            client = self._link.client() if subscribers.watched(uri) else None
            stale: Subscription | None = None
            mine: threading.Event | None = None
            with self._lock:
                opening = self._opening.get(uri)
                held = self._held.get(uri)
                if opening is not None:
                    pass  # another thread opens it: wait for that, then look again
                elif subscribers.watched(uri) and client is not None:
                    if held is not None and held[1].active and held[0] is client:
                        return
                    if held is None and len(self._held) + len(self._opening) >= self._limit:
                        raise MCPError(f"the proxy follows at most {self._limit} resources "
                                       "of the proxied server at once; unsubscribe from "
                                       "one first", code=INTERNAL_ERROR)
                    mine = self._opening[uri] = threading.Event()
                elif not subscribers.watched(uri) and held is not None:
                    del self._held[uri]
                    stale = held[1]
                else:
                    return
            if opening is not None:
                if not opening.wait(OPEN_WAIT):
                    raise MCPError(f"the proxy's subscription to {uri} on the proxied "
                                   "server is still being opened", code=INTERNAL_ERROR)
                continue
            if stale is not None:
                stale.close()  # the remote's unsubscribe, with no lock held
                return
            assert mine is not None and client is not None
            self._open_marked(client, uri, mine)
            if subscribers.watched(uri):
                return
            # Unsubscribed meanwhile: the next turn closes what was just opened.

    def _open_marked(self, client: Client, uri: str, mine: threading.Event) -> None:
        """Open ``uri``'s subscription on ``client`` (marked as opening by this thread)
        with no lock held, then record it; the mark is lifted whatever happens."""
        replaced: Subscription | None = None
        try:
            subscription = self._open(client, uri)
            with self._lock:
                previous = self._held.get(uri)
                self._held[uri] = (client, subscription)
            replaced = previous[1] if previous is not None else None
        finally:
            with self._lock:
                self._opening.pop(uri, None)
            mine.set()
        if replaced is not None:
            replaced.close()

    def reconnected(self, client: Client) -> None:
        """The link connected (again): on ``client``, follow every URI that has
        subscribers here (those followed on the lost connection are dead), and nothing
        else. A URI the remote now refuses is logged: its subscribers get no updates."""
        subscribers = self._server.subscribers
        stale: list[Subscription] = []
        todo: list[tuple[str, threading.Event]] = []
        with self._lock:
            wanted = subscribers.uris()
            for uri in [u for u in self._held if u not in wanted]:
                stale.append(self._held.pop(uri)[1])
            for uri in wanted:
                held = self._held.get(uri)
                if uri in self._opening or (held is not None and held[0] is client
                                            and held[1].active):
                    continue  # being opened by a caller's subscribe, or alive
                if held is not None:
                    stale.append(self._held.pop(uri)[1])
                if len(self._held) + len(self._opening) >= self._limit:
                    logger.warning("proxy of %s: %s is not followed (at most %d are)",
                                   self._link.target, uri, self._limit)
                    continue
                event = self._opening[uri] = threading.Event()
                todo.append((uri, event))
        for subscription in stale:
            subscription.close()
        for uri, event in todo:
            try:
                self._open_marked(client, uri, event)
            except MCPError as exc:
                logger.warning("proxy of %s: %s (its subscribers here get no updates)",
                               self._link.target, exc)

    def close(self) -> None:
        """Close every subscription on the remote (the proxy's shutdown)."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for _, subscription in held:
            subscription.close()

    def _open(self, client: Client, uri: str) -> Subscription:
        if not self._server.subscribers.offered:
            raise MCPError("the proxied server offers no resource subscriptions",
                           code=INTERNAL_ERROR)
        try:
            return client.listen(tools=False, prompts=False, resources=False,
                                 resource_uris=[uri], on_notification=self._updated)
        except MCPError as exc:  # the remote's own answer: passed on as it said it
            raise MCPError(f"the proxied server refused a subscription to {uri}: "
                           f"{exc.message}", code=INTERNAL_ERROR, data=exc.data) from None
        except MCPSyncError as exc:  # the hop: where the remote is stays in the log
            logger.warning("proxy of %s: subscribing to %s failed: %s", self._link.target,
                           uri, exc)
            raise MCPError(f"the proxied server did not subscribe to {uri}",
                           code=INTERNAL_ERROR) from None

    def _updated(self, note: SubscriptionNotification) -> None:
        uri = note.uri
        if uri is not None:
            self._server.notify_resource_updated(uri)
