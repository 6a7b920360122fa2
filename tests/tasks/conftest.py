"""Fixtures for the task store tests: every contract test runs against each store."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync.tasks import MemoryTaskStore, SqliteTaskStore, TaskRecord, TaskStore

STORES = ["memory", "sqlite", "redis"]


def make_record(**fields: Any) -> TaskRecord:
    """A working v2 task of ``alice`` running ``slow``, with a fresh id, unless told."""
    fields.setdefault("task_id", secrets.token_urlsafe(16))
    fields.setdefault("owner", "alice")
    fields.setdefault("surface", "v2")
    fields.setdefault("tool", "slow")
    fields.setdefault("ttl_ms", 600_000)
    return TaskRecord(**fields)


def _factory(kind: str, tmp_path: Path,
             request: pytest.FixtureRequest) -> Callable[..., TaskStore]:
    count = iter(range(1_000))
    if kind == "redis":  # the run's real Redis (skipped, or failed in CI, when missing)
        url: str = request.getfixturevalue("redis_url")
        prefix: str = request.getfixturevalue("redis_prefix")

    def make(**bounds: Any) -> TaskStore:
        if kind == "memory":
            return MemoryTaskStore(**bounds)
        if kind == "redis":
            from mcpsync.redis.tasks import RedisTaskStore

            return RedisTaskStore(url, prefix=f"{prefix}-{next(count)}", **bounds)
        return SqliteTaskStore(tmp_path / f"tasks-{next(count)}.db", **bounds)

    return make


@pytest.fixture(params=STORES)
def make_store(request: pytest.FixtureRequest,
               tmp_path: Path) -> Iterator[Callable[..., TaskStore]]:
    """A function making stores of one kind (with bounds as keywords); all closed after."""
    made: list[TaskStore] = []
    factory = _factory(request.param, tmp_path, request)

    def make(**bounds: Any) -> TaskStore:
        store = factory(**bounds)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., TaskStore]) -> TaskStore:
    return make_store()
