"""mcpsync on Redis (the ``redis`` extra): shared state for many workers on many machines.

Handshake-era sessions (:class:`RedisSessionStore`), resumable SSE streams
(:class:`RedisEventStore`), tasks (:class:`RedisTaskStore`) and the relay between workers
(:class:`RedisBus`). Importing this package imports the ``redis`` client library; nothing
else in mcpsync does. See ``docs/redis.md`` and ``docs/deploying.md``.
"""

from __future__ import annotations

from .bus import RedisBus
from .client import connect
from .events import RedisEventStore
from .sessions import RedisSessionStore
from .tasks import RedisTaskStore

__all__ = ["RedisBus", "RedisEventStore", "RedisSessionStore", "RedisTaskStore", "connect"]
