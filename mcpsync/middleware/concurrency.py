"""``ConcurrencyLimit``: at most N calls running at once per principal (or tool, or key of
your own), so that one caller's long calls cannot take every handler thread.

A call over the limit is refused at once (:class:`~.errors.RateLimitedError`, HTTP 429),
not queued: waiting would hold the very handler thread the limit protects.

Slots live in this process (``storage="memory://"``) or in Redis, where every worker and
machine shares them: one sorted set per key, one member per running call, scored by when
its *lease* ends. Taking a slot is one script (drop expired leases, count, add), run on the
Redis server's clock so machines with skewed clocks agree. A call gives its slot back when
it ends; a worker killed mid-call cannot, and its slot frees itself when the lease ends
(``lease`` seconds). While a call runs, one thread per process and guard
(``mcpsync-concurrency-leases``, running only while calls hold slots) pushes its lease
forward every third of a lease, so a long call keeps its slot however long it runs.
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
#: KEYS[1]: the slots; ARGV: lease (ms), then the members whose lease to push forward
#: (only those still there: ZADD XX never brings back a slot that was given up).
_RENEW = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', ms + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
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
    """Leased slots in Redis (see the module docstring), and the thread that renews the
    leases of this process's running calls."""

    def __init__(self, storage: Any, prefix: str, lease: float) -> None:
        self._redis = redis_client(storage)
        self._prefix = prefix
        self._lease_ms = max(1, int(lease * 1000))
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._renew = self._redis.register_script(_RENEW)
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}  # token -> Redis key, for the calls running here
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # set when the last call here gave its slot back

    def acquire(self, key: str, limit: int) -> str | None:
        token = f"{os.getpid()}:{uuid.uuid4().hex}"
        with reachable("concurrency limit"):
            taken = self._acquire(keys=[self._prefix + key],
                                  args=[limit, self._lease_ms, token])
        if not taken:
            return None
        with self._lock:
            self._held[token] = self._prefix + key
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew_leases,
                                                 name="mcpsync-concurrency-leases",
                                                 daemon=True)
                self._renewer.start()
        return token

    def _renew_leases(self) -> None:
        """Every third of a lease, push the lease of each call still running here forward
        (one script per key), so a live call keeps its slot however long it runs. Ends
        as soon as no call is running here (the next slot taken starts it again), or on
        close()."""
        while True:
            self._wake.wait(self._lease_ms / 3000)
            self._wake.clear()
            if self._stop.is_set():
                break
            with self._lock:
                if not self._held:
                    self._renewer = None
                    return
                by_key: dict[str, list[str]] = {}
                for token, key in self._held.items():
                    by_key.setdefault(key, []).append(token)
            for key, tokens in by_key.items():
                try:
                    with reachable("concurrency lease"):
                        self._renew(keys=[key], args=[self._lease_ms, *tokens])
                except StoreUnavailableError as exc:  # the next round tries again
                    logger.warning("could not renew concurrency leases: %s", exc)
        with self._lock:
            self._renewer = None

    def close(self, timeout: float = 5.0) -> None:
        """Stop renewing (the leases then run out) and join the thread."""
        self._stop.set()
        self._wake.set()
        with self._lock:
            renewer = self._renewer
        if renewer is not None:
            renewer.join(timeout)

    def release(self, key: str, token: str) -> None:
        with self._lock:
            self._held.pop(token, None)
            if not self._held:
                self._wake.set()
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
    seconds a Redis slot outlives a worker that died holding it (default 300; a live
    call's lease is renewed).
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

    def close(self) -> None:
        """Stop renewing this process's Redis leases (they then run out) and join the
        thread that renews them. Nothing to do in memory."""
        if isinstance(self._slots, _RedisSlots):
            self._slots.close()

    def running(self, ctx: HandlerContext, params: dict[str, Any]) -> int:
        """How many calls hold a slot of the key ``ctx``/``params`` fall under."""
        return self._slots.running(self._key(ctx, params))

    def __repr__(self) -> str:
        return f"ConcurrencyLimit({self.limit})"


__all__ = ["ConcurrencyLimit"]
