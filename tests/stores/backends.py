"""Every store backend, made the same way for the contract suites in this folder (and for
the HTTP and Redis tests that need a store of one kind).

A factory is ``new(**options)``: a new store instance, as another worker would make it,
over the state every instance of that factory shares (one directory, one SQLite file, one
Redis key prefix on the run's ``redis-server``; in memory, one store, since memory is shared
only within a process). Redis stores use the run's real Redis through the ``redis_url`` and
``redis_prefix`` fixtures (skipped, or failed in CI, when ``redis-server`` is missing).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from mcpsync.http import FileSessionStore, InMemoryEventStore, MemorySessionStore
from mcpsync.http.events import DEFAULT_MAX_BYTES
from mcpsync.stores import EventStore, SessionStore, TaskRecord, TaskStore
from mcpsync.tasks import MemoryTaskStore, SqliteTaskStore

#: Every SessionStore backend.
SESSION_STORES = ("memory", "file", "redis")
#: Every EventStore backend.
EVENT_STORES = ("memory", "redis")
#: Every TaskStore backend.
TASK_STORES = ("memory", "sqlite", "redis")


def _redis(request: pytest.FixtureRequest) -> tuple[str, str]:
    url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_prefix")
    return url, prefix


def session_store_factory(kind: str, request: pytest.FixtureRequest,
                          tmp_path: Path) -> Callable[..., SessionStore]:
    """``new(**options)`` for session stores of ``kind`` (see the module)."""
    if kind == "memory":
        made: dict[tuple[tuple[str, Any], ...], MemorySessionStore] = {}

        def memory(**options: Any) -> SessionStore:
            # One store is the shared state; a store with other options is another one.
            return made.setdefault(tuple(sorted(options.items())),
                                   MemorySessionStore(**options))

        return memory
    if kind == "file":
        return lambda **options: FileSessionStore(tmp_path / "sessions", **options)
    if kind == "redis":
        from mcpsync.redis import RedisSessionStore

        url, prefix = _redis(request)
        return lambda **options: RedisSessionStore(url, prefix=prefix, **options)
    raise AssertionError(kind)


def event_store_factory(kind: str, request: pytest.FixtureRequest) -> Callable[..., EventStore]:
    """``new(max_events=, max_bytes=, **options)`` for event stores of ``kind``. One
    stream's bounds are the same figures on both (``max_bytes`` is per process in memory,
    per stream on Redis)."""
    if kind == "memory":
        return lambda max_events=256, max_bytes=DEFAULT_MAX_BYTES: InMemoryEventStore(
            max_events_per_stream=max_events, max_bytes=max_bytes)
    if kind == "redis":
        from mcpsync.redis import RedisEventStore

        url, prefix = _redis(request)
        return lambda max_events=256, max_bytes=DEFAULT_MAX_BYTES, **options: (
            RedisEventStore(url, prefix=prefix, max_events_per_stream=max_events,
                            max_bytes_per_stream=max_bytes, **options))
    raise AssertionError(kind)


def task_store_factory(kind: str, request: pytest.FixtureRequest,
                       tmp_path: Path) -> Callable[..., TaskStore]:
    """``make(**bounds)`` for task stores of ``kind``: each call a store of its own (a new
    file, a new prefix), for tests of bounds."""
    serial = count()
    if kind == "memory":
        return lambda **bounds: MemoryTaskStore(**bounds)
    if kind == "sqlite":
        return lambda **bounds: SqliteTaskStore(tmp_path / f"tasks-{next(serial)}.db", **bounds)
    if kind == "redis":
        from mcpsync.redis.tasks import RedisTaskStore

        url, prefix = _redis(request)
        return lambda **bounds: RedisTaskStore(url, prefix=f"{prefix}-{next(serial)}",
                                               **bounds)
    raise AssertionError(kind)


def make_record(**fields: Any) -> TaskRecord:
    """A working v2 task of ``alice`` running ``slow``, with a fresh id, unless told."""
    fields.setdefault("task_id", secrets.token_urlsafe(16))
    fields.setdefault("owner", "alice")
    fields.setdefault("surface", "v2")
    fields.setdefault("tool", "slow")
    fields.setdefault("ttl_ms", 600_000)
    return TaskRecord(**fields)
