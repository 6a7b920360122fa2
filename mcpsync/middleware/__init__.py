"""Guards for an MCP server under real traffic: rate and concurrency limits, a response
size bound, a cache for reads and an audit trail, added with ``server.add_middleware``::

    from mcpsync.middleware import AuditLog, RateLimit

    server.add_middleware(AuditLog())
    server.add_middleware(RateLimit("20/minute", key="ip", storage="redis://localhost/0"))

A guard is ``guard(ctx, params, next_) -> result`` around every handler the server runs,
on its handler thread: the one inbound path (``Server.run_handler``) that stdio, memory
and HTTP requests of every era take, and that a mounted server and a proxy take too. So a
guard holds the same on every transport, and with Redis storage across every worker and
machine. docs/operations.md shows each one and a production recipe.
"""

from __future__ import annotations

from .audit import AuditLog
from .cache import ResponseCache
from .concurrency import ConcurrencyLimit
from .errors import RateLimitedError
from .ratelimit import RateLimit
from .response import ResponseLimit

__all__ = ["AuditLog", "ConcurrencyLimit", "RateLimit", "RateLimitedError", "ResponseCache",
           "ResponseLimit"]
