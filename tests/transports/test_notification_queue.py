"""A slow notification callback can not make a chatty server cost unbounded memory: the
client's notification queue is bounded (count and bytes), drops past the bound, warns once
per burst, and delivers again once it has drained. The bound is the engine's, so it holds
on every transport; tested over memory and HTTP."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from mcpsync import Client, ClientLimits, HandlerContext, LogMessage, Server
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer

FLOOD = 3000


def chatty_server() -> Server:
    srv = Server("chatty")

    @srv.tool()
    def flood(ctx: HandlerContext, n: int, size: int = 10) -> str:
        for i in range(n):
            ctx.log("info", {"i": i, "pad": "x" * size})
        return "flooded"

    @srv.tool()
    def last(ctx: HandlerContext) -> str:
        ctx.log("info", "last")
        return "ok"

    return srv


class SlowLog:
    """An on_log that blocks on its first message until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.last = threading.Event()
        self.seen = 0

    def __call__(self, message: LogMessage) -> None:
        self.seen += 1
        if message.data == "last":
            self.last.set()
        self.release.wait(WAIT)


@contextmanager
def connected(transport: str, **options) -> Iterator[Client]:
    srv = chatty_server()
    if transport == "memory":
        with Client.memory(srv, **options) as client:
            yield client
        return
    app = srv.wsgi_app(path="/mcp")
    with RunningServer(app) as running, Client.http(
            running.base + "/mcp", protocol_version="2025-11-25", **options) as client:
        yield client
    app.close()


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize(("bound", "limit"), [
    ({}, 1000),  # the default
    ({"limits": ClientLimits(max_queued_notifications=100)}, 100),
    ({"limits": ClientLimits(max_queued_notification_bytes=100 * 1024)}, 100),  # ~1 KiB each
])
def test_a_slow_on_log_drops_past_the_bound_and_warns_once(transport, bound, limit, caplog):
    slow = SlowLog()
    with caplog.at_level(logging.WARNING, logger="mcpsync.engine"), connected(
            transport, on_log=slow, timeout=WAIT, **bound) as client:
        client.set_logging_level("debug")
        assert client.call_tool("flood", {"n": FLOOD, "size": 1000}).text == "flooded"
        slow.release.set()
        # "last" must find room: let the queue drain first (else it is dropped too).
        wait_until(lambda: not client._connection.queued_notifications, timeout=WAIT,
                   message=lambda: client._connection.queued_notifications)
        assert client.call_tool("last").text == "ok"
        assert slow.last.wait(WAIT)
        # One blocked in on_log, the bound queued behind it, "last": the rest were dropped.
        assert slow.seen <= limit + 2, slow.seen
        assert client.dropped_notifications >= FLOOD - limit - 1
    drops = [r for r in caplog.records if "dropping inbound notifications" in r.getMessage()]
    assert len(drops) == 1  # one warning for the burst, not one per notification
    assert any("drained" in r.getMessage() for r in caplog.records)


def test_below_the_bound_nothing_is_dropped():
    slow = SlowLog()
    slow.release.set()
    with connected("memory", on_log=slow, timeout=WAIT) as client:
        client.set_logging_level("debug")
        assert client.call_tool("flood", {"n": 500}).text == "flooded"
        assert client.call_tool("last").text == "ok"
        assert slow.last.wait(WAIT)
        assert slow.seen == 501
        assert client.dropped_notifications == 0
