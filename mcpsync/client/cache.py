"""The client's response cache for 2026-07-28 caching hints (``ttlMs``, ``cacheScope``).

A result of ``server/discover``, a list method or ``resources/read`` is kept while
``now < received + ttlMs``, keyed by the method and the params that change the result
(``cursor`` for lists, ``uri`` for reads); ``ttlMs`` absent, zero, negative or not an
integer means "do not keep". Answers to multi round-trip retries are never kept, and a
matching notification drops entries: ``notifications/tools/list_changed`` every
``tools/list`` page, ``.../resources/list_changed`` the resource and template lists,
``notifications/resources/updated`` the reads of that URI and of URIs it contains or that
contain it.

One cache belongs to one Client, i.e. one authorization context, so ``"private"`` and
``"public"`` results are kept alike. Thread-safe; the clock is injectable for tests.

Bounded: at most ``max_entries`` results of at most ``max_bytes`` in all (their encoded
JSON size). A server that hands out long ``ttlMs`` on many distinct reads would otherwise
make the cache grow for as long as the client lives; past the bound the oldest entries go
first, and a single result larger than the whole bound is simply not kept.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from ..protocol.methods import VIEWS
from ..protocol.versions import uri_covers

#: The methods whose results are cached (the method table's cacheable rows).
CACHEABLE: Final = VIEWS.cacheable
#: What each one's cache key takes from its params (``None``: one entry per method).
_KEY_PARAM: Final = VIEWS.cache_key

#: Which cached methods each list_changed notification makes stale.
_INVALIDATES: Final = VIEWS.invalidates

Key = tuple[str, Any]

#: Default bounds of one client's cache.
DEFAULT_MAX_ENTRIES: Final = 1024
DEFAULT_MAX_BYTES: Final = 16 * 1024 * 1024


def cache_key(method: str, params: dict[str, Any] | None) -> Key | None:
    """The key of a cacheable request, or None when the request is not cacheable."""
    if method not in CACHEABLE:
        return None
    params = params or {}
    if "inputResponses" in params or "requestState" in params:
        return None  # an MRTR retry
    param = _KEY_PARAM.get(method)
    if param is None:  # server/discover: one answer
        return (method, None)
    value = params.get(param)
    if param == "cursor":  # a list: one entry per page
        return (method, value if isinstance(value, str) else None)
    return (method, value) if isinstance(value, str) else None  # its target (a URI)


def ttl_of(result: dict[str, Any]) -> float:
    """A result's ``ttlMs`` in seconds; 0 for absent, negative or malformed values."""
    ttl = result.get("ttlMs")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        return 0.0
    return ttl / 1000.0


class ResponseCache:
    """Fresh results by request key. ``clock`` defaults to :func:`time.monotonic`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *,
                 max_entries: int = DEFAULT_MAX_ENTRIES,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        #: key -> (expires at, result, encoded size); insertion order is age order.
        self._entries: dict[Key, tuple[float, dict[str, Any], int]] = {}
        self._bytes = 0
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._generation = 0

    def generation(self) -> int:
        """Take before sending; pass to :meth:`store` so that an answer that raced with an
        invalidation is not kept."""
        with self._lock:
            return self._generation

    def get(self, key: Key) -> dict[str, Any] | None:
        """A copy of the fresh result for ``key``, or None (a stale entry is dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, result, _ = entry
            if self._clock() >= expires:
                self._drop(key)
                return None
        return copy.deepcopy(result)

    def store(self, key: Key, result: dict[str, Any], generation: int) -> bool:
        """Keep ``result`` if its ``ttlMs`` allows and nothing was invalidated since
        ``generation``. Returns whether it was kept."""
        if result.get("resultType", "complete") != "complete":
            return False
        ttl = ttl_of(result)
        if ttl <= 0:
            return False
        try:
            size = len(json.dumps(result, separators=(",", ":")))
        except (TypeError, ValueError):
            return False
        if size > self.max_bytes or self.max_entries < 1:
            return False
        kept = copy.deepcopy(result)
        with self._lock:
            if generation != self._generation:
                return False
            self._drop(key)
            while self._entries and (len(self._entries) >= self.max_entries
                                     or self._bytes + size > self.max_bytes):
                self._drop(next(iter(self._entries)))  # the oldest
            self._entries[key] = (self._clock() + ttl, kept, size)
            self._bytes += size
        return True

    def _drop(self, key: Key) -> None:
        entry = self._entries.pop(key, None)  # the caller holds the lock
        if entry is not None:
            self._bytes -= entry[2]

    @property
    def size_bytes(self) -> int:
        """The encoded size of the results kept now."""
        with self._lock:
            return self._bytes

    def invalidate(self, method: str, *, uri: str | None = None) -> None:
        """Drop every entry of ``method`` (every page), or only the reads of ``uri`` and of
        URIs it contains or that contain it."""
        with self._lock:
            self._generation += 1
            for key in [k for k in self._entries if k[0] == method]:
                if uri is None or (isinstance(key[1], str) and (
                        uri_covers(uri, key[1]) or uri_covers(key[1], uri))):
                    self._drop(key)

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        """Apply a server notification: list_changed and resources/updated invalidate."""
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                self.invalidate("resources/read", uri=uri)
            return
        for stale in _INVALIDATES.get(method, ()):
            self.invalidate(stale)

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


__all__ = ["CACHEABLE", "ResponseCache", "cache_key", "ttl_of"]
