import pytest

from mcpsync.engine.outbound import IdAllocator
from mcpsync.protocol import lifecycle, versions
from mcpsync.protocol.bookkeeping import InflightTable, cancelled_request_id
from mcpsync.protocol.lifecycle import Event, State


def test_happy_path():
    s = lifecycle.advance(State.NEW, Event.INITIALIZE_ANSWERED)
    assert s is State.INITIALIZING
    s = lifecycle.advance(s, Event.INITIALIZED_RECEIVED)
    assert s is State.READY
    assert lifecycle.advance(s, Event.CLOSED) is State.CLOSED


def test_initialized_before_initialize_is_refused():
    with pytest.raises(lifecycle.LifecycleError):
        lifecycle.advance(State.NEW, Event.INITIALIZED_RECEIVED)


def test_gate():
    assert lifecycle.admits(State.NEW, "initialize")
    assert lifecycle.admits(State.NEW, "ping")
    assert not lifecycle.admits(State.NEW, "tools/list")
    assert lifecycle.admits(State.INITIALIZING, "tools/list")
    assert not lifecycle.admits(State.READY, "initialize")
    assert not lifecycle.admits(State.CLOSED, "ping")


def test_every_state_can_close():
    for state in State:
        assert lifecycle.advance(state, Event.CLOSED) is State.CLOSED


def test_negotiation():
    assert versions.negotiate_legacy("2025-06-18") == "2025-06-18"
    assert versions.negotiate_legacy("2024-11-05") == "2024-11-05"
    assert versions.negotiate_legacy("1999-01-01") == versions.LATEST_LEGACY
    assert versions.negotiate_legacy(None) == versions.LATEST_LEGACY
    assert versions.negotiate_legacy("2026-07-28") == versions.LATEST_LEGACY  # not a handshake rev


def test_table_facts():
    assert versions.features("2025-03-26").batching
    assert not versions.features("2025-06-18").batching
    assert versions.features("2025-06-18").structured_output
    assert not versions.features("2025-03-26").structured_output
    assert versions.features("2026-07-28").era == "modern"
    assert versions.LEGACY_VERSIONS[0] == "2025-11-25"
    assert tuple(sorted(versions.ALL_VERSIONS, reverse=True)) == versions.ALL_VERSIONS


def test_ids_and_inflight():
    ids = IdAllocator()
    assert [ids.next() for _ in range(3)] == [1, 2, 3]
    table: InflightTable[str] = InflightTable()
    assert table.begin(1, "a")
    assert not table.begin(1, "again")
    assert table.get(1) == "a"
    assert table.finish(1) == "a"
    assert table.finish(1) is None
    table.begin("x", "b")
    assert table.drain() == ["b"] and len(table) == 0


@pytest.mark.parametrize(("params", "expected"), [
    ({"requestId": 3}, 3), ({"requestId": "a"}, "a"), ({"requestId": True}, None),
    ({}, None), (None, None), ({"requestId": None}, None),
])
def test_cancelled_request_id(params, expected):
    assert cancelled_request_id(params) == expected
