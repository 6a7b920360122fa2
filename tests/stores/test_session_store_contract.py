"""The SessionStore contract, run over every store (see ``conftest.py``'s
``new_session_store``: memory, file, and Redis on a real ``redis-server``): records that
round-trip through another instance, ids a request header may carry, idle expiry, and the
shared state (log level, subscriptions) each of them declares in ``capabilities``.

What only one store has stays with it: the Redis key layout, index and outages in
``tests/redis/test_session_store.py``, the file store's lock in
``tests/http/test_file_store_lock.py``; two workers over HTTP in
``tests/http/test_session_store.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpsync.stores import SessionRecord, SessionStore, SessionStoreCapabilities
from tests.helpers import WAIT, run_threads, wait_until

LEGACY = "2025-06-18"

#: Ids a request header may carry: none may reach another session, key or file.
HOSTILE_IDS = ["*", "?", "a:b", "a_b", "a_1", "../../etc/passwd", "s:*", "[a-z]*", "\\",
               "x" * 100_000, "é", "\x00"]


@pytest.fixture
def new_store(new_session_store: Callable[..., SessionStore]) -> Callable[..., Any]:
    return new_session_store


def full_record(session_id: str = "s1") -> SessionRecord:
    return SessionRecord(session_id, LEGACY, {"name": "c", "version": "1"},
                         {"sampling": {}, "roots": {"listChanged": True}}, owner="tok:alice",
                         log_level="warning", subscriptions=frozenset({"file:///a", "db://b"}))


# -- the contract, every store -----------------------------------------------------------


def test_a_record_round_trips_through_another_instance(new_store):
    record = full_record()
    new_store().save(record)
    assert new_store().load("s1") == record
    bare = SessionRecord("s2", LEGACY)
    new_store().save(bare)
    assert new_store().load("s2") == bare


def test_save_overwrites(new_store):
    store = new_store()
    store.save(full_record())
    replaced = SessionRecord("s1", "2025-03-26", None, {}, subscriptions=frozenset({"x:y"}))
    store.save(replaced)
    assert new_store().load("s1") == replaced


def test_unknown_and_hostile_ids_are_not_sessions(new_store):
    store = new_store()
    store.save(full_record("real"))
    for session_id in ["never-issued", "", "rea", "real ", *HOSTILE_IDS]:
        assert store.load(session_id) is None, session_id[:20]
        assert store.touch(session_id) is False
        assert store.delete(session_id) is False
    assert store.load("real") == full_record("real")


def test_ids_with_special_characters_are_kept_apart(new_store):
    store = new_store()
    ids = ["a_b", "a:b", "a*", "a?", "a", "[a]", "a b", "é"]
    for n, session_id in enumerate(ids):
        store.save(SessionRecord(session_id, LEGACY, {"n": n}))
    for n, session_id in enumerate(ids):
        record = new_store().load(session_id)
        assert record is not None and record.client_info == {"n": n}
    assert store.delete("a*") and new_store().load("a*") is None
    assert new_store().load("a") is not None and new_store().load("a?") is not None


def test_delete_ends_it_once(new_store):
    new_store().save(full_record())
    assert new_store().touch("s1") is True
    assert new_store().delete("s1") is True
    assert new_store().delete("s1") is False
    assert new_store().load("s1") is None and new_store().touch("s1") is False


def test_records_expire_when_idle(new_store):
    store = new_store(idle_timeout=0.5)
    store.save(full_record())
    wait_until(lambda: store.load("s1") is None, timeout=WAIT,
               message="the record never expired")
    assert store.touch("s1") is False  # touching does not bring it back
    assert store.load("s1") is None


def test_concurrent_saves_and_loads_from_many_instances(new_store):
    def work(i: int) -> bool:
        store = new_store()
        record = SessionRecord(f"c{i}", LEGACY, {"i": i})
        store.save(record)
        return store.load(f"c{i}") == record and store.touch(f"c{i}")

    assert run_threads(work, 16, name="saver", timeout=WAIT) == [True] * 16


# -- shared state (log level, subscriptions): declared by every store here ---------------


def test_every_store_declares_its_shared_state(new_store):
    store = new_store()
    assert isinstance(store, SessionStore)
    assert isinstance(store.capabilities, SessionStoreCapabilities)
    assert store.capabilities.shared_state is not None


def test_log_level_and_subscriptions_are_seen_by_every_instance(new_store):
    a, b = new_store(), new_store()
    a.save(SessionRecord("s1", LEGACY))
    a.set_log_level("s1", "debug")
    b.add_subscription("s1", "file:///x")
    a.add_subscription("s1", "file:///y")
    a.add_subscription("s1", "file:///y")  # twice is once
    record = b.load("s1")
    assert record is not None and record.log_level == "debug"
    assert record.subscriptions == {"file:///x", "file:///y"}
    assert a.subscribers("file:///x") == {"s1"} == b.subscribers("file:///y")
    b.remove_subscription("s1", "file:///x")
    b.remove_subscription("s1", "file:///never")
    assert a.subscribers("file:///x") == set()
    assert a.load("s1").subscriptions == {"file:///y"}  # type: ignore[union-attr]


def test_changes_to_a_missing_session_are_ignored(new_store):
    store = new_store()
    store.set_log_level("ghost", "debug")
    store.add_subscription("ghost", "file:///x")
    store.remove_subscription("ghost", "file:///x")
    assert store.load("ghost") is None
    assert store.subscribers("file:///x") == set()
    for session_id in HOSTILE_IDS:
        store.add_subscription(session_id, "file:///x")
    assert store.subscribers("file:///x") == set()


def test_saved_subscriptions_are_indexed_and_replaced(new_store):
    store = new_store()
    store.save(full_record("s1"))
    store.save(full_record("s2"))
    assert store.subscribers("file:///a") == {"s1", "s2"}
    store.save(SessionRecord("s1", LEGACY, subscriptions=frozenset({"other:z"})))
    assert store.subscribers("file:///a") == {"s2"}
    assert store.subscribers("other:z") == {"s1"}
    store.delete("s2")
    assert store.subscribers("file:///a") == set() and store.subscribers("db://b") == set()


def test_concurrent_subscriptions_lose_nothing(new_store):
    new_store().save(SessionRecord("s1", LEGACY))
    stores = [new_store(), new_store()]

    def subscribe(i: int) -> None:
        stores[i % 2].add_subscription("s1", f"res://{i}")
        stores[(i + 1) % 2].add_subscription(f"peer{i % 4}", f"res://{i}")  # no such session

    run_threads(subscribe, 24, name="subscriber", timeout=WAIT)
    record = stores[0].load("s1")
    assert record is not None and record.subscriptions == {f"res://{i}" for i in range(24)}
    assert all(stores[1].subscribers(f"res://{i}") == {"s1"} for i in range(24))
