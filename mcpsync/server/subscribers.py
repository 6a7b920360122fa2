"""Who is subscribed to which resource: :class:`ResourceSubscribers`, one per Server.

Each era subscribes in its own way. A handshake-era session sends ``resources/subscribe``
and stays subscribed until ``resources/unsubscribe`` or the end of the session. A
2026-07-28 ``subscriptions/listen`` stream names ``resourceSubscriptions`` and stays
subscribed while it is open. Both record their subscriptions here, each subscriber (a
session, a listen stream) with its URIs. So one question has one answer for both eras: is
anyone subscribed to this URI? A server whose resources live elsewhere (a proxy) uses the
watchers to be subscribed at the source exactly while someone is subscribed here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable

logger = logging.getLogger("mcpsync.server")

#: Told of a URI whose subscribers changed; see :attr:`ResourceSubscribers.watchers`.
Watcher = Callable[[str], None]


class ResourceSubscribers:
    """The resource subscriptions of one server, by subscriber. Thread-safe; watchers run
    with no lock held."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[Hashable, set[str]] = {}
        self._counts: dict[str, int] = {}
        #: Each is called with a URI whose subscribers changed (one was added or removed),
        #: on the thread that made the change, once it is recorded: :meth:`watched` then
        #: says where the URI stands. A watcher that raises for an added subscriber undoes
        #: the addition (the subscription fails with that error); one that raises for a
        #: removed subscriber is logged.
        self.watchers: list[Watcher] = []
        #: Whether this server offers resource subscriptions: ``resources.subscribe`` in
        #: its capabilities, ``resources/subscribe`` served, ``resourceSubscriptions``
        #: granted. A proxy of a remote server that offers none sets it False.
        self.offered = True

    def add(self, owner: Hashable, uris: Iterable[str]) -> None:
        """Record that ``owner`` is subscribed to ``uris``, then tell the watchers. If a
        watcher raises, none of ``uris`` stays recorded and the error propagates."""
        added: list[str] = []
        with self._lock:
            mine = self._by_owner.setdefault(owner, set())
            for uri in dict.fromkeys(uris):
                if uri not in mine:
                    mine.add(uri)
                    self._counts[uri] = self._counts.get(uri, 0) + 1
                    added.append(uri)
            if not mine:
                del self._by_owner[owner]
        try:
            for uri in added:
                for watcher in list(self.watchers):
                    watcher(uri)
        except BaseException:
            self.remove(owner, added)
            raise

    def remove(self, owner: Hashable, uris: Iterable[str]) -> None:
        """Forget that ``owner`` is subscribed to ``uris`` (those it is), then tell the
        watchers."""
        removed: list[str] = []
        with self._lock:
            mine = self._by_owner.get(owner)
            if mine is None:
                return
            for uri in dict.fromkeys(uris):
                if uri in mine:
                    mine.discard(uri)
                    removed.append(uri)
                    self._uncount(uri)
            if not mine:
                del self._by_owner[owner]
        self._tell(removed)

    def drop(self, owner: Hashable) -> None:
        """Forget every subscription of ``owner`` (its session ended, its stream closed)."""
        with self._lock:
            mine = self._by_owner.pop(owner, set())
            for uri in mine:
                self._uncount(uri)
        self._tell(sorted(mine))

    def _uncount(self, uri: str) -> None:
        left = self._counts[uri] - 1
        if left:
            self._counts[uri] = left
        else:
            del self._counts[uri]

    def _tell(self, removed: list[str]) -> None:
        for uri in removed:
            for watcher in list(self.watchers):
                try:
                    watcher(uri)
                except Exception:
                    logger.exception("resource subscription watcher failed for %s", uri)

    def has(self, owner: Hashable, uri: str) -> bool:
        """Whether ``owner`` is subscribed to ``uri`` itself."""
        with self._lock:
            return uri in self._by_owner.get(owner, ())

    def count(self, uri: str) -> int:
        """How many subscribers (sessions, listen streams) are subscribed to ``uri``
        itself (a listen stream's URI also covers the URIs under it; not counted here)."""
        with self._lock:
            return self._counts.get(uri, 0)

    def watched(self, uri: str) -> bool:
        """Whether any subscriber is subscribed to ``uri`` itself (see :meth:`count`)."""
        return self.count(uri) > 0

    def uris(self) -> list[str]:
        """The URIs someone is subscribed to now."""
        with self._lock:
            return list(self._counts)


__all__ = ["ResourceSubscribers", "Watcher"]
