"""``ResponseCache``: answer a repeated read from a cache instead of running it again.

What may be cached: ``tools/call`` of a tool that declares ``readOnlyHint`` (or is named in
``tools=``), and ``resources/read``. A result that is an error (``isError``), a task, or a
2026-07-28 question (``InputRequiredResult``, a retry carrying answers) is never stored.

Whose answer is whose: the key is the method, the tool or URI, the arguments (the
request's ``_meta`` aside) and the protocol revision, and, with ``vary_on_principal=True``
(the default), who asked. ``vary_on_principal=False`` shares answers between callers,
except an answer that says it is private: a result whose ``cacheScope`` is ``"private"``
(for ``resources/read`` the server's ``cache_scope`` when the result names none, as
2026-07-28 tells clients) is always kept per principal. A result's ``ttlMs`` shortens
the entry's life (``0``: not stored).

Bounded: in memory, entries are evicted least recently used past ``max_bytes`` (encoded
bytes, 16 MiB by default) and an entry over ``max_entry_bytes`` (1 MiB) is not stored; in
Redis each entry expires with its TTL and the same per-entry bound applies (Redis's own
``maxmemory`` bounds the rest).
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
import time
from collections.abc import Iterable
from typing import Any

from ..dispatch.context import HandlerContext
from ..server.handlers import MethodHandler
from .encoded import encode
from .request import principal, target
from .storage import MEMORY, is_memory, reachable, redis_client

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_ENTRY_BYTES = 1024 * 1024


class _MemoryEntries:
    """An LRU of encoded results, bounded in bytes; each entry with its expiry."""

    def __init__(self, max_bytes: int) -> None:
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[str, tuple[float, bytes]] = \
            collections.OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes

    def get(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: str, value: bytes, ttl: float) -> None:
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (time.monotonic() + ttl, value)
            self._bytes += len(key) + len(value)
            while self._bytes > self.max_bytes and self._entries:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        _, value = self._entries.pop(key)
        self._bytes -= len(key) + len(value)

    @property
    def size(self) -> int:
        with self._lock:
            return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


class _RedisEntries:
    def __init__(self, storage: Any, prefix: str) -> None:
        self._redis = redis_client(storage)
        self._prefix = prefix

    def get(self, key: str) -> bytes | None:
        with reachable("response cache"):
            value = self._redis.get(self._prefix + key)
        return value if isinstance(value, bytes) else None

    def put(self, key: str, value: bytes, ttl: float) -> None:
        with reachable("response cache"):
            self._redis.set(self._prefix + key, value, px=max(1, int(ttl * 1000)))

    def clear(self) -> None:
        with reachable("response cache"):
            for key in self._redis.scan_iter(match=self._prefix + "*", count=500):
                self._redis.delete(key)


class ResponseCache:
    """``ResponseCache(60, tools=None, storage="memory://", vary_on_principal=True)``.

    ``ttl``: seconds an answer is served from the cache. ``tools``: tools cached besides
    those marked ``readOnlyHint`` (``None``: only those; an empty tuple and
    ``read_only=False``: none). ``resources``: cache ``resources/read`` too (default).
    ``storage``: ``"memory://"`` or Redis (a URL or client: shared by every worker).
    ``vary_on_principal``: keep each caller's answers apart (default); a private answer is
    kept apart regardless. ``max_bytes``, ``max_entry_bytes``: the bounds (see the module).
    ``name``: the entries' prefix in Redis.
    """

    def __init__(self, ttl: float, *, tools: Iterable[str] | None = None,
                 read_only: bool = True, resources: bool = True, storage: Any = MEMORY,
                 vary_on_principal: bool = True, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
                 name: str = "mcpsync-cache") -> None:
        if ttl <= 0:
            raise ValueError("ResponseCache(ttl): seconds, more than 0")
        self.ttl = float(ttl)
        self.tools = frozenset(tools or ())
        self.read_only = read_only
        self.resources = resources
        self.vary_on_principal = vary_on_principal
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._entries: _MemoryEntries | _RedisEntries = (
            _MemoryEntries(max_bytes) if is_memory(storage)
            else _RedisEntries(storage, f"{name}:"))

    def _cacheable(self, ctx: HandlerContext, params: dict[str, Any]) -> bool:
        if "inputResponses" in params or "requestState" in params or "task" in params:
            return False  # a retry with answers, a call run as a task: never the same twice
        method = ctx.method
        if method == "resources/read":
            return self.resources
        if method != "tools/call":
            return False
        name = target(method, params)
        if name is None:
            return False
        if name in self.tools:
            return True
        if not self.read_only:
            return False
        tools = getattr(ctx.server, "tools", None)
        tool = tools.get(name) if tools is not None else None
        annotations = (tool.description.get("annotations") if tool is not None else None) or {}
        return annotations.get("readOnlyHint") is True

    @staticmethod
    def _key(ctx: HandlerContext, params: dict[str, Any], who: str | None) -> str:
        asked = {key: value for key, value in params.items() if key != "_meta"}
        # The revision too: a handler may answer each era its own way (content types,
        # fields one of them lacks).
        version = getattr(ctx.session, "protocol_version", None)
        text = json.dumps([ctx.method, asked, who, version], sort_keys=True,
                          separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()

    def __call__(self, ctx: HandlerContext, params: dict[str, Any],
                 next_: MethodHandler) -> dict[str, Any]:
        if not self._cacheable(ctx, params):
            return next_(ctx, params)
        who = principal(ctx)
        # Private answers are looked up under the caller's key first: a shared lookup
        # could only ever find answers that said they were public.
        keys = [self._key(ctx, params, who)]
        if not self.vary_on_principal:
            keys.append(self._key(ctx, params, None))
        for key in keys:
            hit = self._entries.get(key)
            if hit is not None:
                cached: dict[str, Any] = json.loads(hit)
                return cached
        result = next_(ctx, params)
        self._store(ctx, params, who, result)
        return result

    def _store(self, ctx: HandlerContext, params: dict[str, Any], who: str,
               result: dict[str, Any]) -> None:
        if result.get("isError") or result.get("resultType") in ("task", "input_required") \
                or "task" in result:
            return
        ttl = self.ttl
        hint = result.get("ttlMs")
        if isinstance(hint, (int, float)) and not isinstance(hint, bool):
            ttl = min(ttl, hint / 1000)
        if ttl <= 0:
            return
        scope = result.get("cacheScope")
        if scope is None and ctx.method == "resources/read":
            scope = getattr(getattr(ctx.server, "protocol", None), "cache_scope", None)
        shared = not self.vary_on_principal and scope != "private"
        value = encode(result)
        if len(value) > self.max_entry_bytes:
            return
        self._entries.put(self._key(ctx, params, None if shared else who), value, ttl)

    def clear(self) -> None:
        """Drop every entry (in Redis: every entry under this cache's name)."""
        self._entries.clear()

    def __repr__(self) -> str:
        return f"ResponseCache({self.ttl:g})"


__all__ = ["ResponseCache"]
