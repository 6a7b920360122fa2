"""The parts of the relay on their own: InProcessBus, MemorySessionStore, the shared
session state of FileSessionStore, and request ids per worker."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import pytest
from freezegun import freeze_time

from mcpsync.engine.outbound import PrefixedIds
from mcpsync.errors import StoreUnavailableError
from mcpsync.http import FileSessionStore, MemorySessionStore, SessionRecord
from mcpsync.http.bus import Bus, InProcessBus
from mcpsync.http.session_store import SessionStore, SharedSessionState
from tests.helpers import run_threads

from .raw import LEGACY, WAIT


@pytest.fixture
def bus() -> Any:
    running = InProcessBus()
    yield running
    running.close()


def test_in_process_bus_fans_out_in_order(bus):
    assert isinstance(bus, Bus)
    got: list[list[int]] = [[], []]
    done = threading.Event()

    def first(message: dict[str, Any]) -> None:
        got[0].append(message["n"])

    def second(message: dict[str, Any]) -> None:
        got[1].append(message["n"])
        if message["n"] == 99:
            done.set()

    bus.subscribe(first)
    bus.subscribe(second)
    for n in range(100):
        bus.publish({"kind": "t", "n": n})
    assert done.wait(WAIT)
    assert got == [list(range(100))] * 2


def test_a_failing_subscriber_is_logged_and_the_bus_goes_on(bus, caplog):
    seen: list[int] = []
    done = threading.Event()

    def failing(message: dict[str, Any]) -> None:
        raise RuntimeError("subscriber bug")

    def fine(message: dict[str, Any]) -> None:
        seen.append(message["n"])
        if len(seen) == 2:
            done.set()

    bus.subscribe(failing)
    bus.subscribe(fine)
    with caplog.at_level(logging.ERROR, logger="mcpsync.http"):
        bus.publish({"kind": "t", "n": 1})
        bus.publish({"kind": "t", "n": 2})
        assert done.wait(WAIT)
    assert seen == [1, 2]
    assert "a subscriber failed" in caplog.text


def test_unsubscribe_stops_delivery(bus):
    seen: list[int] = []
    marker = threading.Event()
    stop = bus.subscribe(lambda m: seen.append(m["n"]))
    bus.subscribe(lambda m: marker.set() if m["n"] == 2 else None)
    bus.publish({"kind": "t", "n": 1})
    stop()
    bus.publish({"kind": "t", "n": 2})
    assert marker.wait(WAIT)
    assert seen in ([1], [])  # 1 may or may not have gone out before the stop; 2 never


def test_in_process_bus_drops_the_oldest_past_its_bounds(caplog):
    bus = InProcessBus(max_queued=3)
    release = threading.Event()
    first = threading.Event()
    seen: list[int] = []
    finished = threading.Event()

    def slow(message: dict[str, Any]) -> None:
        first.set()
        release.wait(WAIT)
        seen.append(message["n"])
        if message["n"] == 9:
            finished.set()

    bus.subscribe(slow)
    try:
        bus.publish({"kind": "t", "n": 0})
        assert first.wait(WAIT)  # 0 is being delivered; the queue is empty
        with caplog.at_level(logging.WARNING, logger="mcpsync.http"):
            for n in range(1, 10):
                bus.publish({"kind": "t", "n": n})
        assert bus.dropped == 6
        assert "dropped" in caplog.text
        release.set()
        assert finished.wait(WAIT)
        assert seen == [0, 7, 8, 9]
    finally:
        bus.close()
    big = InProcessBus(max_queued_bytes=100)
    try:
        big.subscribe(lambda m: release.wait(WAIT))
        for _ in range(5):
            big.publish({"kind": "t", "pad": "x" * 40})
        assert big.dropped >= 3  # never more than 100 bytes queued
    finally:
        big.close()


def test_closed_bus_refuses_and_its_thread_is_joined():
    bus = InProcessBus()
    bus.close()
    assert not bus._thread.is_alive()
    with pytest.raises(StoreUnavailableError):
        bus.publish({"kind": "t"})
    with pytest.raises(StoreUnavailableError):
        bus.subscribe(lambda m: None)
    bus.close()  # idempotent


def test_bus_messages_are_json_objects_with_a_kind(bus):
    with pytest.raises(ValueError):
        bus.publish({"no": "kind"})
    with pytest.raises(TypeError):
        bus.publish({"kind": "t", "x": object()})


# -- MemorySessionStore -----------------------------------------------------------------


def test_memory_store_is_a_session_store_with_shared_state():
    store = MemorySessionStore()
    assert isinstance(store, SessionStore) and isinstance(store, SharedSessionState)
    record = SessionRecord("s1", LEGACY, {"name": "c"}, {"sampling": {}}, owner="o")
    store.save(record)
    assert store.load("s1") == record
    assert store.touch("s1") and not store.touch("nope")
    store.set_log_level("s1", "error")
    store.add_subscription("s1", "a://1")
    store.add_subscription("nope", "a://1")  # an unknown session: ignored
    assert store.load("s1") == SessionRecord("s1", LEGACY, {"name": "c"}, {"sampling": {}},
                                             owner="o", log_level="error",
                                             subscriptions=frozenset({"a://1"}))
    assert store.subscribers("a://1") == {"s1"}
    store.remove_subscription("s1", "a://1")
    assert store.subscribers("a://1") == set()
    assert store.delete("s1") and not store.delete("s1") and store.load("s1") is None


def test_memory_store_expires_idle_records_and_is_bounded():
    with freeze_time("2026-12-01") as clock:
        store = MemorySessionStore(idle_timeout=60.0, max_sessions=2)
        store.save(SessionRecord("s1", LEGACY))
        store.save(SessionRecord("s2", LEGACY))
        store.add_subscription("s2", "a://1")
        clock.tick(30)
        assert store.touch("s1")
        clock.tick(31)
        assert store.load("s1") is not None
        assert store.load("s2") is None and store.subscribers("a://1") == set()
        store.save(SessionRecord("s3", LEGACY))
        store.save(SessionRecord("s4", LEGACY))  # over max_sessions: the oldest goes
        assert store.load("s1") is None and len(store) == 2


def test_concurrent_subscriptions_lose_none():
    store = MemorySessionStore()
    store.save(SessionRecord("s", LEGACY))
    run_threads(lambda i: store.add_subscription("s", f"u://{i}"), 16, name="sub",
                timeout=WAIT)
    record = store.load("s")
    assert record is not None and len(record.subscriptions) == 16


def test_file_store_shares_state_between_processes(tmp_path):
    one, two = FileSessionStore(tmp_path), FileSessionStore(tmp_path)
    assert isinstance(one, SharedSessionState)
    one.save(SessionRecord("s", LEGACY, owner="o"))
    run_threads(lambda i: (one if i % 2 else two).add_subscription("s", f"u://{i}"), 16,
                name="fsub", timeout=WAIT)
    two.set_log_level("s", "warning")
    record = one.load("s")
    assert record is not None and record.log_level == "warning" and record.owner == "o"
    assert record.subscriptions == {f"u://{i}" for i in range(16)}
    assert two.subscribers("u://3") == {"s"}
    one.remove_subscription("s", "u://3")
    assert two.subscribers("u://3") == set()
    # A change to a deleted session does not bring it back.
    assert one.delete("s")
    two.set_log_level("s", "debug")
    assert two.load("s") is None and list(tmp_path.glob("*.json")) == []


def test_prefixed_request_ids():
    ids = PrefixedIds("abc")
    assert [ids.next() for _ in range(3)] == ["abc-1", "abc-2", "abc-3"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_an_app_whose_relay_was_started_before_a_fork_refuses_to_serve_in_the_child():
    # gunicorn --preload builds the app in the master: the relay's thread and subscription
    # stay there, and a worker serving anyway would drop every relayed message. It says so.
    from werkzeug.test import EnvironBuilder

    from mcpsync import Server
    from mcpsync.http import InMemoryEventStore

    bus = InProcessBus()
    app = Server("preloaded").wsgi_app(path="/mcp", bus=bus, session_store=MemorySessionStore(),
                                       event_store=InMemoryEventStore())
    try:
        environ = EnvironBuilder(path="/mcp", method="POST", data=b"{}", headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}).get_environ()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answer one request, report its status, leave at once
            try:
                statuses: list[str] = []
                body = b"".join(app(environ, lambda status, headers, exc=None: statuses.append(
                    status)))
                os.write(write, (statuses[0] + "|" + body.decode()).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            status, _, body = pipe.read().decode().partition("|")
        os.waitpid(pid, 0)
        assert status.startswith("503"), status
        assert "another process" in body and '"jsonrpc"' in body
    finally:
        app.close()
        bus.close()
