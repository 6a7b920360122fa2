"""The deploy tests' app (``tests/deploy/app.py``) with the guards of issue 40 on one Redis
(``MCPSYNC_DEPLOY_REDIS_URL``, names under ``MCPSYNC_DEPLOY_REDIS_PREFIX``), as
``docs/operations.md`` recommends, served by every gunicorn worker of the fleet test
(``tests.deploy.guarded_app:app``):

- ``AuditLog`` writing JSON lines to ``MCPSYNC_DEPLOY_AUDIT_DIR/audit-<pid>.jsonl``;
- ``RateLimit("20/minute", key="ip")`` on ``whoami``, believing nginx's ``X-Forwarded-For``;
- ``ConcurrencyLimit(2)`` per principal on ``hold``;
- ``ResponseCache(60)`` per principal on the read-only ``profile``.

Who calls is the ``X-User`` header (the test's stand-in for an auth layer).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from mcpsync import HandlerContext, ToolAnnotations, current_transport
from mcpsync.middleware import AuditLog, ConcurrencyLimit, RateLimit, ResponseCache
from mcpsync.protocol.jsonrpc import Message, Request
from tests.deploy.app import app, server, where

REDIS = os.environ["MCPSYNC_DEPLOY_REDIS_URL"]
PREFIX = os.environ["MCPSYNC_DEPLOY_REDIS_PREFIX"]
HOLD_LIMIT = 30  # seconds ``hold`` waits for its release at most


def who(message: Message, next_: Callable[[Message], None]) -> None:
    transport = current_transport()
    if transport is not None and isinstance(message, Request):
        user = transport.headers.get("X-User")
        if user:
            transport.auth = {"sub": user}
    next_(message)


def _audit_logger() -> logging.Logger:
    logger = logging.getLogger("tests.deploy.audit")
    handler = logging.FileHandler(os.path.join(os.environ["MCPSYNC_DEPLOY_AUDIT_DIR"],
                                               f"audit-{os.getpid()}.jsonl"))
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


server.recv_middleware.append(who)
server.add_middleware(AuditLog(_audit_logger(), trusted_proxies=["127.0.0.1"]))
server.add_middleware(RateLimit("20/minute", key="ip", trusted_proxies=["127.0.0.1"],
                                tools=["whoami"], storage=REDIS, name=f"{PREFIX}:rate"))
server.add_middleware(ConcurrencyLimit(2, key="principal", tools=["hold"], storage=REDIS,
                                       name=f"{PREFIX}:concurrency", lease=60))
server.add_middleware(ResponseCache(60, storage=REDIS, name=f"{PREFIX}:cache"))

_redis: Any = None


@server.tool()
def hold(ctx: HandlerContext, key: str) -> dict[str, Any]:
    """Hold a slot until the test pushes to the Redis list ``key`` (bounded)."""
    global _redis
    import redis

    if _redis is None:
        _redis = redis.Redis.from_url(REDIS)
    ctx.progress(0, 1, "holding")
    _redis.blpop([f"{PREFIX}:{key}"], timeout=HOLD_LIMIT)
    return where()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def profile(ctx: HandlerContext) -> dict[str, Any]:
    """Read-only: the caller's profile, and which worker made this answer."""
    return {**where(), "user": (ctx.auth or {}).get("sub")}


__all__ = ["app"]
