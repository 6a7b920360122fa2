"""``ConcurrencyLimit``: at most N calls running at once per principal (or tool, or key of
your own), so that one caller's long calls cannot take every handler thread.

A call over the limit is refused at once (:class:`~.errors.RateLimitedError`, HTTP 429),
not queued: waiting would hold the very handler thread the limit protects.

Slots live in this process (``storage="memory://"``) or in Redis, where every worker and
machine shares them: one sorted set per key, one member per running call, scored by when
its *lease* ends. Taking a slot is one script (drop expired leases, count, add), run on the
Redis server's clock so machines with skewed clocks agree. A call gives its slot back when
it ends; a worker killed mid-call cannot, and its slot frees itself when the lease ends
(``lease`` seconds: make it longer than your longest call).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ..dispatch.context import HandlerContext
from ..errors import StoreUnavailableError
from ..server.handlers import MethodHandler
from .errors import RateLimitedError
from .request import KeySpec, Selection, key_function, networks
from .storage import MEMORY, is_memory, reachable, redis_client

#: KEYS[1]: the slots; ARGV: limit, lease (ms), member. 1 when a slot was taken.
logger = logging.getLogger("mcpsync.middleware")

_ACQUIRE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0
"""


class _MemorySlots:
    """Counts per key in this process (bounded: a key with no running call is dropped)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}

    def acquire(self, key: str, limit: int) -> str | None:
        with self._lock:
            count = self._running.get(key, 0)
            if count >= limit:
                return None
            self._running[key] = count + 1
            return key

    def release(self, key: str, token: str) -> None:
        with self._lock:
            count = self._running.get(key, 0) - 1
            if count > 0:
                self._running[key] = count
            else:
                self._running.pop(key, None)

    def running(self, key: str) -> int:
        with self._lock:
            return self._running.get(key, 0)


class _RedisSlots:
    """Leased slots in Redis (see the module docstring)."""

    def __init__(self, storage: Any, prefix: str, lease: float) -> None:
        self._redis = redis_client(storage)
        self._prefix = prefix
        self._lease_ms = max(1, int(lease * 1000))
        self._acquire = self._redis.register_script(_ACQUIRE)

    def acquire(self, key: str, limit: int) -> str | None:
        token = f"{os.getpid()}:{uuid.uuid4().hex}"
        with reachable("concurrency limit"):
            taken = self._acquire(keys=[self._prefix + key],
                                  args=[limit, self._lease_ms, token])
        return token if taken else None

    def release(self, key: str, token: str) -> None:
        try:
            with reachable("concurrency limit"):
                self._redis.zrem(self._prefix + key, token)
        except StoreUnavailableError as exc:  # the call's answer stands; the lease frees it
            logger.warning("could not give back a concurrency slot (its lease will): %s", exc)

    def running(self, key: str) -> int:
        with reachable("concurrency limit"):
            return int(self._redis.zcard(self._prefix + key))


class ConcurrencyLimit:
    """``ConcurrencyLimit(2, key="principal", storage="redis://...")``: at most ``limit``
    calls at once per key.

    ``key``: as for :class:`~.ratelimit.RateLimit` (``"principal"``, ``"ip"``, ``"tool"``,
    ``"method"``, a tuple, or a function). ``methods``: which requests take a slot
    (default ``tools/call`` only: the calls that run user code for long); ``tools``: only
    these tools. ``storage``: ``"memory://"`` or Redis (a URL or client). ``lease``:
    seconds a Redis slot outlives a worker that died holding it (default 300).
    ``retry_after``: the wait a refusal suggests (seconds). ``name``: the slots' name in
    Redis.
    """

    def __init__(self, limit: int, *, key: KeySpec = "principal", storage: Any = MEMORY,
                 methods: Iterable[str] | None = ("tools/call",),
                 tools: Iterable[str] | None = None, trusted_proxies: Iterable[str] = (),
                 lease: float = 300.0, retry_after: float = 1.0,
                 name: str = "mcpsync-concurrency") -> None:
        if limit < 1:
            raise ValueError("ConcurrencyLimit(limit): at least 1")
        self.limit = limit
        self.retry_after = retry_after
        self._key: Callable[[HandlerContext, dict[str, Any]], str] = key_function(
            key, networks(trusted_proxies))
        self._selection = Selection(methods, tools)
        self._slots: _MemorySlots | _RedisSlots = (
            _MemorySlots() if is_memory(storage) else _RedisSlots(storage, f"{name}:", lease))

    def __call__(self, ctx: HandlerContext, params: dict[str, Any],
                 next_: MethodHandler) -> dict[str, Any]:
        if (ctx.method, params) not in self._selection:
            return next_(ctx, params)
        key = self._key(ctx, params)
        token = self._slots.acquire(key, self.limit)
        if token is None:
            raise RateLimitedError(
                f"Too many concurrent calls: at most {self.limit} at once; "
                f"retry in {self.retry_after:g} s",
                retry_after=self.retry_after, limit=f"{self.limit} concurrent")
        try:
            return next_(ctx, params)
        finally:
            self._slots.release(key, token)

    def running(self, ctx: HandlerContext, params: dict[str, Any]) -> int:
        """How many calls hold a slot of the key ``ctx``/``params`` fall under."""
        return self._slots.running(self._key(ctx, params))

    def __repr__(self) -> str:
        return f"ConcurrencyLimit({self.limit})"


__all__ = ["ConcurrencyLimit"]
