"""The EventStore contract, run over every store (see ``conftest.py``'s
``new_event_store``: in memory, and Redis on a real ``redis-server``): ids, order, exact
data, bounds by count and bytes, forget (declared in ``capabilities``), hostile ids.

What only the Redis store has (age, keys, sharing, outages) is
``tests/redis/test_event_store.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpsync.stores import EventStore, EventStoreCapabilities, ForgetsStreams
from tests.helpers import WAIT, run_threads


@pytest.fixture
def new_store(new_event_store: Callable[..., EventStore]) -> Callable[..., Any]:
    return new_event_store


def _forgets(store: EventStore) -> ForgetsStreams:
    forgets = store.capabilities.forgets
    assert forgets is not None, "every store here declares forget"
    return forgets


def test_every_store_declares_that_it_forgets(new_store):
    store = new_store()
    assert isinstance(store.capabilities, EventStoreCapabilities)
    assert _forgets(store) is not None


def test_ids_name_the_stream_and_count_from_one(new_store):
    store = new_store()
    assert [store.store_event("s", b"x") for _ in range(3)] == ["s_1", "s_2", "s_3"]
    assert store.store_event("t", b"") == "t_1"  # a priming event
    assert store.store_event("s", b"y") == "s_4"


def test_events_after_returns_the_later_events_exactly(new_store):
    store = new_store()
    payloads = [b"", b'{"a":1}', b"a:b:c", b"\x00\xff binary\n\n", "é".encode(), b"z" * 70_000]
    ids = [store.store_event("s", data) for data in payloads]
    assert store.events_after("s_0") == ("s", list(zip(ids, payloads, strict=True)))
    assert store.events_after(ids[2]) == ("s", list(zip(ids[3:], payloads[3:], strict=True)))
    assert store.events_after(ids[-1]) == ("s", [])
    assert store.events_after("s_999") == ("s", [])  # a number not given yet: nothing more


def test_unknown_and_malformed_ids_are_none(new_store):
    store = new_store()
    store.store_event("s", b"x")
    for bad in ["", "s", "s_", "_1", "t_1", "s_-1", "s_+1", "s_1.0", "s_x", "s_²", "s_ 1",
                "s_" + "9" * 19, "*_1", "s*_1", "?_1", "s:_1", "[s]_1", "x" * 100_000 + "_1"]:
        assert store.events_after(bad) is None, bad[:30]


def test_stream_ids_with_special_characters_are_kept_apart(new_store):
    store = new_store()
    streams = ["a", "a:b", "a*", "a?", "[a]", "é", "a b", "a:events:x"]
    for n, stream in enumerate(streams):
        store.store_event(stream, str(n).encode())
    for n, stream in enumerate(streams):
        assert store.events_after(f"{stream}_0") == (stream, [(f"{stream}_1", str(n).encode())])
    with pytest.raises(ValueError, match="_"):
        store.store_event("a_b", b"x")


def test_a_stream_keeps_its_newest_events(new_store):
    store = new_store(max_events=3)
    for n in range(10):
        store.store_event("s", str(n).encode())
    assert store.events_after("s_0") == ("s", [("s_8", b"7"), ("s_9", b"8"), ("s_10", b"9")])
    assert store.store_event("s", b"10") == "s_11"  # numbering goes on


def test_a_stream_is_bounded_in_bytes_oldest_first(new_store):
    store = new_store(max_bytes=1000)
    for n in range(10):
        store.store_event("s", bytes([65 + n]) * 300)
    found = store.events_after("s_0")
    assert found is not None
    assert [i for i, _ in found[1]] == ["s_8", "s_9", "s_10"]
    assert sum(len(data) for _, data in found[1]) <= 1000
    # One event larger than the bound is not kept, evicts nothing, and uses its number.
    assert store.store_event("s", b"y" * 1001) == "s_11"
    assert store.events_after("s_0") == found
    assert store.store_event("s", b"ok") == "s_12"
    assert store.events_after("s_10") == ("s", [("s_12", b"ok")])
    # One exactly at the bound is kept, alone.
    store.store_event("s", b"q" * 1000)
    assert store.events_after("s_0") == ("s", [("s_13", b"q" * 1000)])


def test_a_stream_whose_only_event_was_too_big_still_exists(new_store):
    store = new_store(max_bytes=10)
    assert store.store_event("s", b"x" * 11) == "s_1"
    assert store.events_after("s_0") == ("s", [])


def test_forget_drops_a_stream(new_store):
    store = new_store()
    store.store_event("s", b"x")
    store.store_event("t", b"y")
    _forgets(store).forget("s")
    _forgets(store).forget("s")
    _forgets(store).forget("never")
    assert store.events_after("s_0") is None
    assert store.events_after("t_0") == ("t", [("t_1", b"y")])
    assert store.store_event("s", b"z") == "s_1"  # a forgotten id starts afresh


def test_concurrent_writers_get_distinct_consecutive_ids(new_store):
    store = new_store(max_events=1000)

    def write(i: int) -> list[str]:
        return [store.store_event("s", f"{i}:{k}".encode()) for k in range(20)]

    ids = [i for batch in run_threads(write, 8, name="writer", timeout=WAIT) for i in batch]
    assert sorted(ids, key=lambda i: int(i[2:])) == [f"s_{n}" for n in range(1, 161)]
    found = store.events_after("s_0")
    assert found is not None and [i for i, _ in found[1]] == [f"s_{n}" for n in range(1, 161)]
    for i in range(8):  # each writer's events in its own order
        mine = [d for _, d in found[1] if d.startswith(f"{i}:".encode())]
        assert mine == [f"{i}:{k}".encode() for k in range(20)]
