"""The TaskStore contract, run against every store: memory, SQLite and Redis (see
``conftest.py``'s ``make_task_store``). What only one store has stays with its package
(``tests/tasks/test_memory_store.py``, ``test_sqlite_store.py``, ``tests/redis/``).

What the runner and the ``tasks/*`` surfaces rely on: owner scoping that looks exactly like
absence, terminal-is-final, versions that ``wait`` can watch, cursors that page through
an owner's tasks and refuse what they did not hand out, and a bound on everything a
client can grow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from freezegun import freeze_time

from mcpsync.stores import TaskStoreCapabilities
from mcpsync.tasks import (
    MAX_PAGE_SIZE,
    MAX_TTL_MS,
    TaskResultTooLargeError,
    TaskStore,
    TaskStoreFullError,
    clamp_ttl,
    runner_id,
)
from tests.helpers import WAIT, run_threads

from .backends import make_record


@pytest.fixture
def make_store(make_task_store: Callable[..., TaskStore]) -> Callable[..., TaskStore]:
    return make_task_store


@pytest.fixture
def store(task_store: TaskStore) -> TaskStore:
    return task_store


def test_is_a_task_store(store):
    assert isinstance(store, TaskStore)
    assert isinstance(store.capabilities, TaskStoreCapabilities)


def test_a_declared_recovery_leaves_a_live_runner_s_tasks_alone(store):
    recovers = store.capabilities.recovers
    if recovers is None:  # only a store whose tasks die with its process declares none
        assert type(store).__name__ == "MemoryTaskStore", f"{store!r} declares no recovery"
        return
    record = make_record(runner=runner_id())
    store.create(record)
    assert recovers.recover() == 0
    assert store.get(record.task_id).status == "working"


def test_create_then_get_returns_an_equal_record(store):
    record = make_record(ttl_ms=60_000, poll_interval_ms=500, status_message="starting",
                         input_requests={"q": {"method": "elicitation/create"}})
    store.create(record)
    assert store.get(record.task_id) == record
    assert store.get(record.task_id, owner=record.owner) == record


def test_create_twice_is_a_key_error(store):
    record = make_record()
    store.create(record)
    with pytest.raises(KeyError):
        store.create(record)


def test_another_owner_sees_nothing(store):
    record = make_record(owner="alice")
    store.create(record)
    assert store.get(record.task_id, owner="bob") is None
    assert store.get(record.task_id, owner="") is None
    assert store.cancel(record.task_id, "bob") is None
    assert store.answer(record.task_id, "bob", {"k": 1}) is None
    assert store.list("bob") == ([], None)
    # and none of that changed alice's task
    assert store.get(record.task_id) == record


def test_unknown_task_is_none_everywhere(store):
    assert store.get("nope") is None
    assert store.update("nope", status="completed") is None
    assert store.cancel("nope", "alice") is None
    assert store.answer("nope", "alice", {"k": 1}) is None
    assert store.take_responses("nope", ["k"]) == {}
    assert store.wait("nope", 0, timeout=5.0) is None


def test_update_bumps_the_version_and_stamps_the_time(store):
    record = make_record()
    store.create(record)
    after = store.update(record.task_id, status="input_required", status_message="asking",
                         input_requests={"a": {"method": "roots/list"}})
    assert after is not None
    assert (after.status, after.status_message, after.version) == ("input_required",
                                                                   "asking", 1)
    assert after.input_requests == {"a": {"method": "roots/list"}}
    assert after.last_updated_at >= record.created_at
    assert store.get(record.task_id) == after


def test_update_rejects_fixed_and_unknown_fields(store):
    record = make_record()
    store.create(record)
    with pytest.raises(ValueError, match="owner"):
        store.update(record.task_id, owner="mallory")
    with pytest.raises(ValueError, match="version"):
        store.update(record.task_id, version=99)
    with pytest.raises(TypeError, match="colour"):
        store.update(record.task_id, colour="red")
    with pytest.raises(ValueError, match="status"):
        store.update(record.task_id, status="done")
    assert store.get(record.task_id) == record


def test_unencodable_payload_is_refused_when_written(store):
    record = make_record()
    store.create(record)
    with pytest.raises(ValueError):
        store.update(record.task_id, result={"x": float("nan")})
    with pytest.raises(TypeError):
        store.update(record.task_id, result={"x": {1, 2}})
    assert store.get(record.task_id) == record


@pytest.mark.parametrize("final", ["completed", "failed", "cancelled"])
def test_terminal_is_final(store, final):
    record = make_record()
    store.create(record)
    done = store.update(record.task_id, status=final, result={"content": []})
    assert done is not None and done.terminal
    for late in ({"status": "working"}, {"status": "completed", "result": {"late": True}},
                 {"status_message": "again"}):
        assert store.update(record.task_id, **late) == done
    assert store.cancel(record.task_id, record.owner) == done
    assert store.answer(record.task_id, record.owner, {"k": 1}) == done
    assert store.get(record.task_id) == done


def test_cancel_marks_cancelled_and_clears_questions(store):
    record = make_record(status="input_required", input_requests={"q": {}})
    store.create(record)
    after = store.cancel(record.task_id, record.owner, "the user gave up")
    assert after is not None
    assert (after.status, after.status_message, after.input_requests) == (
        "cancelled", "the user gave up", None)
    assert store.update(record.task_id, status="completed", result={}) == after


def test_records_handed_out_are_copies(store):
    record = make_record()
    store.create(record)
    done = store.update(record.task_id, status="completed", result={"content": [1]})
    assert done is not None and done.result is not None
    done.result["content"].append(2)
    again = store.get(record.task_id)
    assert again is not None and again.result == {"content": [1]}


def test_answer_merges_and_take_responses_removes(store):
    record = make_record(status="input_required", input_requests={"a": {}, "b": {}})
    store.create(record)
    first = store.answer(record.task_id, record.owner, {"a": {"action": "accept"}})
    assert first is not None and first.input_responses == {"a": {"action": "accept"}}
    second = store.answer(record.task_id, record.owner, {"b": 2, "a": {"action": "decline"}})
    assert second is not None and second.version > first.version
    assert second.input_responses == {"a": {"action": "decline"}, "b": 2}
    assert store.take_responses(record.task_id, ["a", "missing"]) == {
        "a": {"action": "decline"}}
    left = store.get(record.task_id)
    assert left is not None and left.input_responses == {"b": 2}
    assert store.take_responses(record.task_id, ["a"]) == {}
    assert store.take_responses(record.task_id, ["b"]) == {"b": 2}
    gone = store.get(record.task_id)
    assert gone is not None and gone.input_responses == {}


def test_list_pages_oldest_first_with_cursors(store):
    ids = []
    for i in range(7):
        record = make_record(owner="alice", created_at=1_000.0 + i, ttl_ms=None)
        store.create(record)
        ids.append(record.task_id)
        store.create(make_record(owner="bob", ttl_ms=None))
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page, cursor = store.list("alice", cursor, limit=3)
        pages += 1
        assert len(page) <= 3
        seen += [r.task_id for r in page]
        assert all(r.owner == "alice" for r in page)
        if cursor is None:
            break
    assert seen == ids
    assert pages == 3


def test_list_survives_deletion_of_the_cursor_task(store):
    with freeze_time("2026-01-01 00:00:00") as clock:
        first = make_record(owner="alice", ttl_ms=None, created_at=time.time())
        short = make_record(owner="alice", ttl_ms=1000, created_at=time.time())
        rest = [make_record(owner="alice", ttl_ms=None, created_at=time.time())
                for _ in range(2)]
        for record in [first, short, *rest]:
            store.create(record)
        page, cursor = store.list("alice", limit=2)
        assert [r.task_id for r in page] == [first.task_id, short.task_id]
        assert cursor is not None
        clock.tick(2.0)  # the last task of that page expires before the next is read
        more, end = store.list("alice", cursor, limit=2)
        assert [r.task_id for r in more] == [r.task_id for r in rest]
        assert end is None


@pytest.mark.parametrize("cursor", ["garbage", "-1", "1.5", "", "9" * 30, "99999"])
def test_list_refuses_an_unknown_cursor(store, cursor):
    store.create(make_record(owner="alice"))
    with pytest.raises(ValueError):
        store.list("alice", cursor)


def test_list_page_size_is_bounded(store):
    for _ in range(MAX_PAGE_SIZE + 5):
        store.create(make_record(owner="alice"))
    page, cursor = store.list("alice", limit=10_000)
    assert len(page) == MAX_PAGE_SIZE and cursor is not None
    rest, end = store.list("alice", cursor, limit=10_000)
    assert len(rest) == 5 and end is None
    assert len(store.list("alice", limit=0)[0]) == 1


def test_wait_wakes_on_a_change(store):
    record = make_record()
    store.create(record)
    started = threading.Event()

    def change_later() -> None:
        started.wait(WAIT)
        store.update(record.task_id, status_message="progress")

    writer = threading.Thread(target=change_later, name="t-store-writer")
    writer.start()
    t0 = time.monotonic()
    started.set()
    seen = store.wait(record.task_id, record.version, timeout=WAIT)
    writer.join(WAIT)
    assert seen is not None and seen.status_message == "progress"
    assert time.monotonic() - t0 < WAIT / 2


@pytest.mark.parametrize("ttl_ms", [None, 600_000])
def test_wait_without_a_practical_timeout_still_wakes(store, ttl_ms):
    record = make_record(ttl_ms=ttl_ms)
    store.create(record)
    changed = run_threads(
        lambda i: store.wait(record.task_id, record.version, timeout=float("inf")) if i
        else store.update(record.task_id, status_message="now"), 2, name="t-store-inf")
    assert changed[1] is not None and changed[1].status_message == "now"


def test_wait_returns_at_once_when_already_newer(store):
    record = make_record()
    store.create(record)
    store.update(record.task_id, status_message="x")
    t0 = time.monotonic()
    seen = store.wait(record.task_id, 0, timeout=WAIT)
    assert seen is not None and seen.version == 1
    assert time.monotonic() - t0 < WAIT / 2


def test_wait_times_out_bounded(store):
    record = make_record()
    store.create(record)
    t0 = time.monotonic()
    seen = store.wait(record.task_id, record.version, timeout=0.3)
    took = time.monotonic() - t0
    assert seen == record
    assert 0.25 <= took < 10.0


def test_wait_wakes_on_cancel_from_another_thread(store):
    record = make_record()
    store.create(record)
    results = run_threads(
        lambda i: store.wait(record.task_id, record.version, timeout=WAIT) if i
        else store.cancel(record.task_id, record.owner), 4, name="t-store-cancel")
    assert all(r is not None and r.status == "cancelled" for r in results)


# -- expiry ------------------------------------------------------------------------------


def test_ttl_expiry_with_a_frozen_clock(store):
    with freeze_time("2026-01-01 00:00:00") as clock:
        record = make_record(ttl_ms=60_000, created_at=time.time())
        keep = make_record(ttl_ms=None, created_at=time.time())
        store.create(record)
        store.create(keep)
        clock.tick(59.0)
        assert store.get(record.task_id) is not None
        assert [r.task_id for r in store.list(record.owner)[0]] == [record.task_id,
                                                                   keep.task_id]
        clock.tick(1.0)
        assert store.get(record.task_id) is None
        assert store.update(record.task_id, status="completed") is None
        assert [r.task_id for r in store.list(record.owner)[0]] == [keep.task_id]
        # and a new task may take its id
        store.create(make_record(task_id=record.task_id, ttl_ms=1000, created_at=time.time()))


def test_expire_sweeps_and_counts(store):
    with freeze_time("2026-01-01 00:00:00") as clock:
        for ttl in (1000, 2000, 3000):
            store.create(make_record(ttl_ms=ttl, created_at=time.time()))
        store.create(make_record(ttl_ms=None, created_at=time.time()))
        clock.tick(2.5)
        assert store.expire() == 2
        assert store.expire() == 0
        assert store.expire(now=time.time() + 1) == 1
        assert len(store.list(make_record().owner)[0]) == 1


def test_wait_on_a_task_that_expires_returns_none(store):
    record = make_record(ttl_ms=300)
    store.create(record)
    assert store.wait(record.task_id, record.version, timeout=WAIT) is None


def test_a_ttl_above_the_cap_is_clamped(store):
    record = make_record(ttl_ms=10 * MAX_TTL_MS)
    store.create(record)
    stored = store.get(record.task_id)
    assert stored is not None and stored.ttl_ms == MAX_TTL_MS


def test_a_ttl_above_the_cap_is_clamped_on_update_too(store):
    record = make_record(ttl_ms=1000)
    store.create(record)
    after = store.update(record.task_id, ttl_ms=10 * MAX_TTL_MS)
    assert after is not None and after.ttl_ms == MAX_TTL_MS
    again = store.get(record.task_id)
    assert again is not None and again.ttl_ms == MAX_TTL_MS


def test_wait_with_a_frozen_clock_still_ends(store):
    """Tests freeze time.monotonic too: a bounded wait must not become endless."""
    record = make_record()
    store.create(record)
    with freeze_time("2026-01-01 00:00:00"):
        assert store.wait(record.task_id, record.version, timeout=0.2) == record


def test_clamp_ttl():
    assert clamp_ttl(None) == 3_600_000
    assert clamp_ttl(None, default=None) is None
    assert clamp_ttl(5000) == 5000
    assert clamp_ttl(5) == 1000  # a task nobody could read in time is of no use
    assert clamp_ttl(-5) == 1000
    assert clamp_ttl(5, minimum=0) == 5
    assert clamp_ttl(10 * MAX_TTL_MS) == MAX_TTL_MS
    assert clamp_ttl(None, default=10 * MAX_TTL_MS) == MAX_TTL_MS


# -- bounds ------------------------------------------------------------------------------


def test_live_tasks_per_owner_are_bounded(make_store):
    store = make_store(max_live_per_owner=3)
    records = [make_record(owner="alice") for _ in range(3)]
    for record in records:
        store.create(record)
    with pytest.raises(TaskStoreFullError):
        store.create(make_record(owner="alice"))
    store.create(make_record(owner="bob"))  # another owner is not affected
    store.update(records[0].task_id, status="completed", result={})
    store.create(make_record(owner="alice"))  # a finished task frees a slot


@pytest.mark.parametrize("bound", ["max_live_per_owner", "max_tasks", "max_bytes"])
def test_expired_live_tasks_make_room(make_store, bound):
    store = make_store(**{bound: 2_000 if bound == "max_bytes" else 2})
    with freeze_time("2026-01-01 00:00:00") as clock:
        for _ in range(2):
            store.create(make_record(ttl_ms=1000, tool="t" * 400, created_at=time.time()))
        with pytest.raises(TaskStoreFullError):
            store.create(make_record(ttl_ms=1000, tool="t" * 400, created_at=time.time()))
        clock.tick(1.5)
        store.create(make_record(ttl_ms=1000, tool="t" * 400, created_at=time.time()))


def test_total_tasks_evict_oldest_terminal_never_live(make_store):
    store = make_store(max_tasks=4)
    done = [make_record() for _ in range(2)]
    live = [make_record() for _ in range(2)]
    for record in done + live:
        store.create(record)
    store.update(done[1].task_id, status="completed", result={})
    store.update(done[0].task_id, status="failed", error={"code": 1, "message": "x"})
    newer = make_record()
    store.create(newer)  # evicts done[1], the first to finish
    assert store.get(done[1].task_id) is None
    assert store.get(done[0].task_id) is not None
    store.create(make_record())  # evicts done[0]
    assert store.get(done[0].task_id) is None
    with pytest.raises(TaskStoreFullError):
        store.create(make_record())  # all live now
    for record in live:
        assert store.get(record.task_id) is not None


def test_a_result_over_the_record_bound_is_refused_and_failing_still_works(make_store):
    store = make_store(max_record_bytes=10_000)
    record = make_record()
    store.create(record)
    with pytest.raises(TaskResultTooLargeError) as info:
        store.update(record.task_id, status="completed",
                     result={"content": [{"type": "text", "text": "x" * 20_000}]})
    assert isinstance(info.value, ValueError)
    assert store.get(record.task_id) == record
    failed = store.update(record.task_id, status="failed",
                          error={"code": -32603, "message": "the result was too large"})
    assert failed is not None and failed.status == "failed"


def test_answers_are_bounded_too(make_store):
    store = make_store(max_record_bytes=10_000)
    record = make_record(status="input_required", input_requests={"a": {}})
    store.create(record)
    store.answer(record.task_id, record.owner, {"a": "x" * 4000})
    with pytest.raises(TaskResultTooLargeError):
        store.answer(record.task_id, record.owner, {"b": "y" * 8000})
    after = store.get(record.task_id)
    assert after is not None and set(after.input_responses) == {"a"}


def test_concurrent_writers_never_lose_an_update(store):
    record = make_record(status="input_required")
    store.create(record)

    def answer(i: int) -> None:
        for j in range(20):
            store.answer(record.task_id, record.owner, {f"{i}-{j}": j})

    run_threads(answer, 8, name="t-store-answer")
    after = store.get(record.task_id)
    assert after is not None
    assert len(after.input_responses) == 160 and after.version == 160
