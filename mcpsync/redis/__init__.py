"""mcpsync on Redis (the ``redis`` extra): shared state for many workers on many machines.

Importing this package imports the ``redis`` client library; nothing else in mcpsync does.
See ``docs/redis.md``.
"""

from __future__ import annotations

from .client import connect
from .events import RedisEventStore
from .sessions import RedisSessionStore

__all__ = ["RedisEventStore", "RedisSessionStore", "connect"]
