"""``RateLimit``: at most N requests per period, per principal, client, tool or key of your
own, counted by the ``limits`` library in memory or in Redis (so that one limit holds
across every worker and machine that shares the Redis).

The window is the library's moving window by default: "20/minute" means no more than 20
in any 60 seconds, never 40 across a window boundary. A refused request never reaches its
handler: it is answered :class:`~mcpsync.middleware.errors.RateLimitedError` (-32029, HTTP
429 with ``Retry-After``), the wait in ``data.retryAfter``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from ..dispatch.context import HandlerContext
from ..server.handlers import MethodHandler
from .errors import RateLimitedError
from .request import KeySpec, Selection, key_function, networks
from .storage import MEMORY, limits_storage, reachable

_STRATEGIES = ("moving-window", "fixed-window", "sliding-window-counter")


class RateLimit:
    """``RateLimit("20/minute", key="ip", storage="redis://...")``.

    ``limit``: the ``limits`` notation, several separated by ``;`` (``"10/second;100/hour"``:
    each must hold). ``key``: who shares a count: ``"principal"`` (the default; a request
    nobody authenticated counts by client address), ``"ip"``, ``"tool"`` (per method and
    tool name or URI), ``"method"``, a tuple of these (``("principal", "tool")``), or
    ``fn(ctx, params) -> str``. ``trusted_proxies``: addresses or CIDR blocks of the
    proxies whose ``X-Forwarded-For`` is believed (``key="ip"`` behind nginx:
    ``("127.0.0.1",)``); without it the header is ignored. ``storage``: ``"memory://"``
    (this process) or a Redis URL (shared). ``methods`` / ``tools``: which requests count
    (``None``: every request that reaches a handler). ``name``: the count's name in the
    storage: guards with the same name, limit and key share counts (give two RateLimits on
    one Redis different names). ``strategy``: ``"moving-window"``, ``"fixed-window"`` or
    ``"sliding-window-counter"`` (the library's strategies).
    """

    def __init__(self, limit: str, *, key: KeySpec = "principal", storage: Any = MEMORY,
                 methods: Iterable[str] | None = None, tools: Iterable[str] | None = None,
                 trusted_proxies: Iterable[str] = (), name: str | None = None,
                 strategy: str = "moving-window") -> None:
        from limits import parse_many, strategies

        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy={strategy!r}: expected one of {_STRATEGIES}")
        self.items = tuple(parse_many(limit))
        if not self.items:
            raise ValueError(f"RateLimit({limit!r}): no limit in it")
        self.limit = limit
        store = limits_storage(storage)
        self._limiter: strategies.RateLimiter = (
            strategies.MovingWindowRateLimiter(store) if strategy == "moving-window" else
            strategies.FixedWindowRateLimiter(store) if strategy == "fixed-window" else
            strategies.SlidingWindowCounterRateLimiter(store))
        self._key: Callable[[HandlerContext, dict[str, Any]], str] = key_function(
            key, networks(trusted_proxies))
        self._selection = Selection(methods, tools)
        self.name = name or f"mcpsync-rate:{key if isinstance(key, str) else 'custom'}"

    def __call__(self, ctx: HandlerContext, params: dict[str, Any],
                 next_: MethodHandler) -> dict[str, Any]:
        if (ctx.method, params) not in self._selection:
            return next_(ctx, params)
        identity = self._key(ctx, params)
        limiter = self._limiter
        with reachable("rate limit"):
            for item in self.items:
                if not limiter.hit(item, self.name, identity):
                    stats = limiter.get_window_stats(item, self.name, identity)
                    wait = max(0.0, stats.reset_time - time.time())
                    raise RateLimitedError(
                        f"Rate limit exceeded: {item}; retry in {wait:.1f} s",
                        retry_after=wait, limit=str(item))
        return next_(ctx, params)

    def reset(self) -> None:
        """Forget every count in the storage (tests, an operator's reset)."""
        with reachable("rate limit"):
            self._limiter.storage.reset()

    def __repr__(self) -> str:
        return f"RateLimit({self.limit!r}, name={self.name!r})"


__all__ = ["RateLimit"]
