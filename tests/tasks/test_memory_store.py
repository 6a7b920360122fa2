"""What only the in-memory store has: a bound on the bytes of all records together."""

from __future__ import annotations

import pytest

from mcpsync.tasks import MemoryTaskStore, TaskResultTooLargeError, TaskStoreFullError
from tests.stores.backends import make_record


def _big(n: int) -> dict[str, object]:
    return {"content": [{"type": "text", "text": "x" * n}]}


def test_stored_bytes_evict_the_oldest_terminal_tasks_first():
    store = MemoryTaskStore(max_bytes=50_000)
    records = [make_record() for _ in range(5)]
    for record in records:
        store.create(record)
    for record in records[:4]:
        store.update(record.task_id, status="completed", result=_big(12_000))
    assert store.stored_bytes <= 50_000
    # four 12 kB results and five records do not fit in 50 kB: the first to finish went
    assert store.get(records[0].task_id) is None
    for record in records[1:]:
        assert store.get(record.task_id) is not None
    assert store.stored_bytes <= 50_000


def test_stored_bytes_never_evict_a_live_task():
    store = MemoryTaskStore(max_bytes=30_000, max_record_bytes=20_000)
    live = make_record(status="input_required")
    store.create(live)
    store.answer(live.task_id, live.owner, {"a": "y" * 15_000})
    other = make_record(status="input_required")
    store.create(other)
    with pytest.raises(TaskResultTooLargeError, match="full"):
        store.answer(other.task_id, other.owner, {"a": "z" * 15_000})
    assert store.get(live.task_id) is not None
    # shrinking writes always succeed, so the runner can still fail the task
    failed = store.update(other.task_id, status="failed", error={"code": 1, "message": "x"})
    assert failed is not None and failed.terminal


def test_create_is_refused_when_live_tasks_fill_the_bytes():
    store = MemoryTaskStore(max_bytes=2_000)
    made = 0
    with pytest.raises(TaskStoreFullError):
        for _ in range(100):
            store.create(make_record(tool="t" * 300))
            made += 1
    assert 0 < made < 100
    assert store.stored_bytes <= 2_000


def test_bytes_are_returned_when_tasks_go():
    store = MemoryTaskStore()
    empty = store.stored_bytes
    record = make_record(ttl_ms=1)
    store.create(record)
    store.update(record.task_id, result=_big(1000))
    assert store.stored_bytes > empty + 1000
    assert store.expire(now=record.created_at + 1) == 1
    assert store.stored_bytes == empty == 0
    assert len(store) == 0
