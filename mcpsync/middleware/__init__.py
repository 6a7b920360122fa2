"""Guards for an MCP server under real traffic: rate and concurrency limits, a response
size bound, a cache for reads and an audit trail, added with ``server.add_middleware``::

    from mcpsync.middleware import AuditLog, RateLimit

    server.add_middleware(AuditLog())
    server.add_middleware(RateLimit("20/minute", key="ip", storage="redis://localhost/0"))

A guard is ``guard(ctx, params, next_) -> result`` around every handler the server runs,
on its handler thread: the one inbound path (``Dispatcher.run_handler``) that stdio, memory
and HTTP requests of every era take, and that a mounted server and a proxy take too. So a
guard holds the same on every transport, and with Redis storage across every worker and
machine. docs/operations.md shows each one and a production recipe.

Names are imported on first use (``mcpsync/_lazy.py``): a client that only catches
:class:`RateLimitedError` does not import the guards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .audit import AuditLog
    from .cache import ResponseCache
    from .concurrency import ConcurrencyLimit
    from .errors import RateLimitedError
    from .ratelimit import RateLimit
    from .response import ResponseLimit

_LAZY: dict[str, str] = {
    "AuditLog": ".audit",
    "ResponseCache": ".cache",
    "ConcurrencyLimit": ".concurrency",
    "RateLimitedError": ".errors",
    "RateLimit": ".ratelimit",
    "ResponseLimit": ".response",
}

__all__ = ["AuditLog", "ConcurrencyLimit", "RateLimit", "RateLimitedError", "ResponseCache",
           "ResponseLimit"]

__getattr__, __dir__ = exports(__name__, _LAZY, globals())
