"""RedisBus: the Bus protocol over a real Redis, between buses of one process (each with its
own connections, as two machines would have) and with a real second process; Redis taken
away and given back; what a peer may put on the channel that is not a message; a
subscriber that raises."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from mcpsync.errors import StoreUnavailableError
from mcpsync.http.bus import Bus
from mcpsync.redis.bus import RedisBus
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import wait_until
from tests.services import RedisServer, require_redis_library

ROOT = Path(__file__).resolve().parents[2]


class Inbox:
    """What one subscriber received, with a condition to wait on (bounded)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._changed = threading.Condition()

    def __call__(self, message: dict[str, Any]) -> None:
        with self._changed:
            self.messages.append(message)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float = WAIT) -> list[dict[str, Any]]:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.messages) >= count, timeout):
                raise AssertionError(f"received {len(self.messages)} of {count}: "
                                     f"{self.messages[-5:]}")
            return list(self.messages)


@pytest.fixture
def make_bus(redis_url: str, redis_prefix: str) -> Iterator[Any]:
    made: list[RedisBus] = []

    def make(**options: Any) -> RedisBus:
        bus = RedisBus(redis_url, prefix=redis_prefix, **options)
        made.append(bus)
        return bus

    yield make
    for bus in made:
        bus.close()


def _bus_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcpsync-redis-bus-")]


def test_is_a_bus(make_bus):
    assert isinstance(make_bus(), Bus)


def test_two_buses_see_each_other_and_themselves_in_order(make_bus):
    a, b = make_bus(), make_bus()
    inbox_a, inbox_b = Inbox(), Inbox()
    a.subscribe(inbox_a)
    b.subscribe(inbox_b)

    def publish(bus: RedisBus, name: str) -> None:
        for i in range(50):
            bus.publish({"kind": "tick", "from": name, "i": i})

    writers = [threading.Thread(target=publish, args=(bus, name), name=f"t-bus-{name}")
               for bus, name in ((a, "a"), (b, "b"))]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(WAIT)
    for inbox in (inbox_a, inbox_b):
        got = inbox.wait_for(100)
        assert len(got) == 100
        for name in ("a", "b"):
            assert [m["i"] for m in got if m["from"] == name] == list(range(50))


def test_another_process_hears_and_is_heard(make_bus, redis_url, redis_prefix):
    bus = make_bus()
    inbox = Inbox()
    bus.subscribe(inbox)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.redis.bus_worker", redis_url, redis_prefix, "20"],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        for i in range(20):
            bus.publish({"kind": "tick", "from": "parent", "i": i})
        child.stdin.write("go\n")
        child.stdin.flush()
        out, _ = child.communicate(timeout=WAIT)
        assert child.returncode == 0, out
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(WAIT)
    theirs = json.loads(out)
    mine = inbox.wait_for(40)
    for got in (theirs, mine):
        for name in ("parent", "child"):
            assert [m["i"] for m in got if m["from"] == name] == list(range(20))


def test_unsubscribe_stops_delivery_to_that_callback(make_bus):
    bus = make_bus()
    gone, stays = Inbox(), Inbox()
    stop = bus.subscribe(gone)
    bus.subscribe(stays)
    bus.publish({"kind": "one"})
    gone.wait_for(1)
    stop()
    stop()  # idempotent
    bus.publish({"kind": "two"})
    assert [m["kind"] for m in stays.wait_for(2)] == ["one", "two"]
    assert [m["kind"] for m in gone.messages] == ["one"]


def test_close_joins_the_listener_thread_and_is_idempotent(make_bus):
    before = set(_bus_threads())
    bus = make_bus()
    bus.subscribe(Inbox())
    started = set(_bus_threads()) - before
    assert len(started) == 1
    bus.close()
    bus.close()
    assert not any(t.is_alive() for t in started)
    with pytest.raises(RuntimeError):
        bus.publish({"kind": "late"})
    with pytest.raises(RuntimeError):
        bus.subscribe(Inbox())


def test_one_listener_thread_however_many_subscribers(make_bus):
    before = set(_bus_threads())
    bus = make_bus()
    for _ in range(5):
        bus.subscribe(Inbox())
    assert len(set(_bus_threads()) - before) == 1


def test_publish_refuses_what_is_not_a_json_object(make_bus):
    bus = make_bus(max_message_bytes=1000)
    with pytest.raises(TypeError):
        bus.publish(["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        bus.publish({"kind": "nan", "x": float("nan")})
    with pytest.raises(TypeError):
        bus.publish({"kind": "set", "x": {1, 2}})
    with pytest.raises(ValueError, match="1000 bytes"):
        bus.publish({"kind": "big", "x": "x" * 2000})


def test_malformed_payloads_are_logged_and_skipped(make_bus, redis_url, caplog):

    caplog.set_level(logging.WARNING, logger="mcpsync.redis.bus")
    bus = make_bus(max_message_bytes=1000)
    inbox = Inbox()
    bus.subscribe(inbox)
    raw = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        for payload in (b"not json", b"[1, 2]", b"\"text\"", b"\xff\xfe", b"{\"a\": ",
                        json.dumps({"kind": "big", "x": "y" * 2000}).encode()):
            raw.publish(bus.channel, payload)
        raw.publish(bus.channel, b'{"kind": "good"}')
    finally:
        raw.close()
    assert inbox.wait_for(1) == [{"kind": "good"}]
    assert bus.listening
    warnings = [r for r in caplog.records if "malformed" in r.getMessage()]
    assert len(warnings) == 1  # the rest within LOG_EVERY are counted, not logged


def test_a_raising_callback_is_logged_and_harms_nothing(make_bus, caplog):
    caplog.set_level(logging.WARNING, logger="mcpsync.redis.bus")
    bus = make_bus()
    inbox = Inbox()

    def broken(message: dict[str, Any]) -> None:
        raise RuntimeError("subscriber bug")

    bus.subscribe(broken)
    bus.subscribe(inbox)
    for i in range(3):
        bus.publish({"kind": "tick", "i": i})
    assert [m["i"] for m in inbox.wait_for(3)] == [0, 1, 2]
    assert bus.listening
    assert any("subscriber bug" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_redis_down_then_back(caplog):
    require_redis_library()
    caplog.set_level(logging.WARNING, logger="mcpsync.redis.bus")
    with RedisServer() as server:
        bus = RedisBus(server.url, prefix="down")
        try:
            inbox = Inbox()
            bus.subscribe(inbox)
            bus.publish({"kind": "before"})
            inbox.wait_for(1)
            server.kill()
            t0 = time.monotonic()
            with pytest.raises(StoreUnavailableError):
                bus.publish({"kind": "lost"})
            assert time.monotonic() - t0 < 20.0  # never a hang
            wait_until(lambda: not bus.listening, timeout=WAIT,
                       message="the listener never noticed Redis was gone")
            server.start()

            def delivered() -> bool:
                try:
                    bus.publish({"kind": "after"})
                except StoreUnavailableError:
                    return False
                return any(m["kind"] == "after" for m in inbox.messages)

            wait_until(delivered, timeout=WAIT, interval=0.1,
                       message="delivery never resumed after Redis came back")
            assert all(m["kind"] != "lost" for m in inbox.messages)
        finally:
            bus.close()
    outages = [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert len(outages) == 1  # once per outage, not per retry
    assert any("back" in r.getMessage() for r in caplog.records)


def test_subscribing_while_redis_is_down_delivers_once_it_is_back():
    require_redis_library()
    with RedisServer() as server:
        url = server.url
        server.kill()
        bus = RedisBus(url, prefix="later")
        try:
            inbox = Inbox()
            t0 = time.monotonic()
            bus.subscribe(inbox)  # bounded, does not raise
            assert time.monotonic() - t0 < 20.0
            assert not bus.listening
            server.start()

            def delivered() -> bool:
                try:
                    bus.publish({"kind": "hello"})
                except StoreUnavailableError:
                    return False
                return bool(inbox.messages)

            wait_until(delivered, timeout=WAIT, interval=0.1,
                       message="the bus never subscribed once Redis came back")
        finally:
            bus.close()


def test_the_docs_example(redis_url, capsys):
    text = (ROOT / "docs" / "redis-bus.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```python\n(.*?)```", text, re.S)
    block = block.replace("redis://redis.internal:6379/0", redis_url)
    before = set(_bus_threads())
    exec(compile(block, "redis-bus.md", "exec"), {})
    assert "got {'kind': 'hello', 'from': 'worker-1'}" in capsys.readouterr().out
    assert not any(t.is_alive() for t in set(_bus_threads()) - before)
