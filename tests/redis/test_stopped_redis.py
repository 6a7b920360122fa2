"""A Redis that accepts connections and never answers (``SIGSTOP``: as a swapping,
paused or partitioned one looks) must cost a request one budget, not the sum of every
socket timeout, retry and reconnect of every store call it makes; and when the Redis
process is continued, service resumes by itself.

Each test stops a private ``redis-server`` of its own and always continues it (the
fixture does, whatever the test did).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcpsync import HandlerContext, Server
from mcpsync.errors import StoreUnavailableError
from mcpsync.protocol.budget import Budget
from tests.helpers import wait_until
from tests.http.raw import (
    BOTH,
    LEGACY,
    WAIT,
    LegacySession,
    SseReader,
    modern_headers,
    modern_request,
    post_modern,
)
from tests.services import RedisServer, require_redis_library

#: Generous slack on top of a budget for "ended within it" (a shared, busy machine).
SLACK = 4.0


class Frozen:
    """A private Redis that a test can stop (``SIGSTOP``) and continue."""

    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.url = server.url
        self.stopped = False

    def stop(self) -> None:
        assert self.server.pid is not None
        os.kill(self.server.pid, signal.SIGSTOP)
        self.stopped = True

    def cont(self) -> None:
        if self.stopped and self.server.pid is not None:
            os.kill(self.server.pid, signal.SIGCONT)
        self.stopped = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.stop()
        try:
            yield
        finally:
            self.cont()


@pytest.fixture
def frozen() -> Iterator[Frozen]:
    require_redis_library()
    with RedisServer() as server:
        handle = Frozen(server)
        try:
            yield handle
        finally:
            handle.cont()


def post(url: str, body: Any, session_id: str | None = None, *,
         timeout: float = 60.0) -> requests.Response:
    """A handshake-era POST with a long client timeout: the server must end it first."""
    headers = {"Accept": BOTH, "MCP-Protocol-Version": LEGACY}
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    return requests.post(url, json=body, headers=headers, timeout=timeout)


def get(url: str, session_id: str, last_event_id: str | None = None, *,
        timeout: float = 60.0) -> requests.Response:
    headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": LEGACY,
               "Mcp-Session-Id": session_id}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    return requests.get(url, headers=headers, stream=True, timeout=timeout)


WHO = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
       "params": {"name": "who", "arguments": {}}}


def timed(call: Any) -> tuple[Any, float]:
    began = time.monotonic()
    result = call()
    return result, time.monotonic() - began


def assert_503(response: requests.Response) -> None:
    """The refusal a client can act on: 503, ``Retry-After``, a JSON-RPC error body."""
    assert response.status_code == 503, response.text
    assert response.headers.get("Retry-After")
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["message"].startswith(
        "Service unavailable"), body


# -- the store calls themselves --------------------------------------------------------


def test_store_calls_share_one_budget_and_recover(frozen):
    from mcpsync.redis import RedisEventStore, RedisSessionStore
    from mcpsync.redis.client import DEFAULT_SOCKET_TIMEOUT

    events = RedisEventStore(frozen.url, prefix="p")
    sessions = RedisSessionStore(frozen.url, prefix="p")
    stream_id = events.store_event("s1", b"{}").rpartition("_")[0]
    assert sessions.load("nobody") is None  # both connected before Redis stops
    with frozen.paused():
        budget = Budget(1.0, "three calls")
        began = time.monotonic()
        with budget.applied():
            for call in (lambda: events.store_event(stream_id, b"{}"),
                         lambda: sessions.load("nobody"),
                         lambda: events.events_after(f"{stream_id}_0")):
                with pytest.raises(StoreUnavailableError):
                    call()
        spent = time.monotonic() - began
        # Old code: three calls of 5 s socket timeout each, and a retry: 30 s and more.
        assert spent < 1.0 + SLACK < DEFAULT_SOCKET_TIMEOUT * 3
        assert budget.spent_out
    assert events.events_after(f"{stream_id}_0") is not None  # Redis continued: it answers


def test_a_call_outside_any_budget_is_bounded_by_its_own(frozen):
    """A handler thread storing an event has no request budget: the call budget bounds
    it, retry and reconnect included (old code: a timeout, a retry, a reconnect whose
    handshake times out again: 10 s and more)."""
    from mcpsync.redis import RedisEventStore
    from mcpsync.redis.client import DEFAULT_CALL_BUDGET

    store = RedisEventStore(frozen.url, prefix="p")
    store.store_event("s1", b"{}")
    with frozen.paused():
        began = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="budget"):
            store.store_event("s1", b"{}")
        assert time.monotonic() - began < DEFAULT_CALL_BUDGET + SLACK
    assert store.events_after("s1_0") is not None  # Redis continued: it answers


def test_forgetting_many_streams_costs_one_call_while_redis_is_stopped(frozen):
    """An app that closes ends every session, and each forgets its streams: with Redis
    stopped that was one full wait per stream (old code: 10 s and more each). The clean-up
    is skipped within a call budget of a failure (the keys expire by themselves), and
    tried again once Redis answers."""
    from mcpsync.redis import RedisEventStore

    store = RedisEventStore(frozen.url, prefix="p", call_budget=1.0)
    streams = [f"s{n}" for n in range(5)]
    for stream_id in streams:
        store.store_event(stream_id, b"{}")
    with frozen.paused():
        began = time.monotonic()
        for stream_id in streams:
            with pytest.raises(StoreUnavailableError):
                store.forget(stream_id)
        assert time.monotonic() - began < 1.0 + SLACK

    def forgotten() -> bool:
        try:
            store.forget(streams[0])
        except StoreUnavailableError:
            return False
        return store.events_after(f"{streams[0]}_0") is None

    wait_until(forgotten, timeout=WAIT, message="forget never worked again")


def test_a_client_the_application_made_gets_the_budget_too(frozen):
    """A ready ``redis.Redis`` (here with a 60 s reply timeout) is bounded by the budget
    as well: its pool's connections are the budgeted kind from then on."""
    import redis

    from mcpsync.redis import RedisEventStore

    client = redis.Redis.from_url(frozen.url, socket_timeout=60)
    store = RedisEventStore(client, prefix="p")
    store.store_event("s1", b"{}")
    with frozen.paused():
        began = time.monotonic()
        with Budget(1.0, "the test's budget").applied(), pytest.raises(
                StoreUnavailableError, match="the test's budget"):
            store.events_after("s1_0")
        assert time.monotonic() - began < 1.0 + SLACK
    assert client.ping()  # and the client is still the application's, working


# -- requests of the handshake era -----------------------------------------------------


def worker(name: str) -> Server:
    server = Server(name)

    @server.tool()
    def who(ctx: HandlerContext) -> dict[str, Any]:
        """Which worker answered."""
        return {"worker": name}

    return server


def stores(url: str, **options: Any) -> dict[str, Any]:
    from mcpsync.redis import RedisEventStore, RedisSessionStore

    return {"session_store": RedisSessionStore(url, prefix="w"),
            "event_store": RedisEventStore(url, prefix="w"), **options}


def test_a_request_is_refused_within_the_default_budget_then_served(serve, frozen):
    """The issue's case: a session held by worker a, its next request on worker b, which
    must restore it from Redis. With Redis stopped: 503 within the default budget (10 s),
    not after every store call's timeouts in a row; continued: served, no restart."""
    a = serve(worker("a"), **stores(frozen.url))
    b = serve(worker("b"), **stores(frozen.url))
    session = LegacySession(a.url)
    with frozen.paused():
        response, took = timed(lambda: post(b.url, WHO, session.session_id))
        assert_503(response)
        assert took < 10.0 + SLACK, took
    assert post(b.url, WHO, session.session_id).status_code == 200


def test_a_resume_from_the_event_store_is_refused_within_the_budget(serve, frozen):
    a = serve(worker("a"), **stores(frozen.url, store_budget=1.0))
    session = LegacySession(a.url)
    stream = session.get()
    assert stream.status_code == 200
    last = SseReader(stream).next_event()["id"]  # the priming event, stored
    stream.close()
    with frozen.paused():
        response, took = timed(lambda: get(a.url, session.session_id, last))
        assert_503(response)
        assert took < 1.0 + SLACK, took
    resumed = get(a.url, session.session_id, last)
    assert resumed.status_code == 200
    resumed.close()


def test_a_streaming_answer_goes_on_while_its_event_writes_stall(serve, frozen):
    """The request has answered (its SSE stream is open) when Redis stops: each event
    write of the handler thread ends within the store's per-call budget, the messages go
    out (without ids), and the stream ends with the answer. Old code: 10 s and more per
    write, under the session's write lock."""
    from mcpsync.redis import RedisEventStore

    go = threading.Event()
    server = Server("streamer")

    @server.tool()
    def slow(ctx: HandlerContext) -> str:
        """Log once Redis is stopped, then answer."""
        if not go.wait(WAIT * 3):
            return "never went"
        ctx.log("info", "after the stop")
        return "done"

    a = serve(server, event_store=RedisEventStore(frozen.url, prefix="w", call_budget=1.0))
    session = LegacySession(a.url)
    request_id, response = session.request("tools/call", {"name": "slow", "arguments": {}},
                                           stream=True)
    assert response.headers["Content-Type"].startswith("text/event-stream")
    reader = SseReader(response)
    assert reader.next_event()["id"]  # the priming event: stored while Redis answered
    with frozen.paused():
        began = time.monotonic()
        go.set()
        messages = reader.messages(until_id=request_id)
        took = time.monotonic() - began
    response.close()
    assert [m.get("method") for m in messages] == ["notifications/message", None]
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    assert took < 2 * 1.0 + SLACK, took  # two writes (the log, the answer), 1 s each
    request_id, again = session.request("tools/call", {"name": "slow", "arguments": {}},
                                        stream=True)
    events = [e for e in iter(SseReader(again).next_event, None) if e.get("data")]
    again.close()
    assert all(e.get("id") for e in events)  # Redis continued: numbered (resumable) again
    assert '"done"' in events[-1]["data"]


# -- with a relay bus ------------------------------------------------------------------


def relayed(url: str, **options: Any) -> dict[str, Any]:
    from mcpsync.redis import RedisBus

    return stores(url, bus=RedisBus(url, prefix="w"), **options)


def initialize(url: str) -> requests.Response:
    return post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": LEGACY, "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}},
                timeout=120)


def test_initialize_with_a_relay_bus_is_answered_within_the_budget(serve, frozen):
    """Old code: no answer in 100 s. The answer's own event write (on a handler thread)
    and the session's save both wait on Redis: they share the request's one budget."""
    a = serve(worker("a"), **relayed(frozen.url, store_budget=2.0))
    assert initialize(a.url).status_code == 200
    with frozen.paused():
        response, took = timed(lambda: initialize(a.url))
        assert_503(response)
        assert took < 2.0 + SLACK, took
    answered = initialize(a.url)
    assert answered.status_code == 200 and answered.headers["Mcp-Session-Id"]


def test_a_live_relayed_stream_is_closed_when_redis_stops(serve, frozen):
    """A GET stream that follows its key in the event store cannot carry anything while
    the store hangs: it is closed (the client resumes once Redis is back), not left
    waiting on Redis at every tick."""
    from mcpsync.redis.client import DEFAULT_CALL_BUDGET

    a = serve(worker("a"), keepalive_interval=0.2, **relayed(frozen.url, store_budget=2.0))
    session = LegacySession(a.url)
    stream = session.get()
    assert stream.status_code == 200
    reader = SseReader(stream)
    last = reader.next_event()
    ended = threading.Event()

    def read_to_the_end() -> None:
        while reader.next_event() is not None:
            pass
        ended.set()

    thread = threading.Thread(target=read_to_the_end, name="test-sse-reader", daemon=True)
    with frozen.paused():
        thread.start()
        assert ended.wait(DEFAULT_CALL_BUDGET + 2.0 + SLACK), "the stream was left open"
    thread.join(WAIT)
    stream.close()
    assert last is not None
    wait_until(lambda: session.get().status_code == 200, timeout=WAIT,
               message="no GET stream after Redis continued")


def test_a_2026_request_whose_tool_notifies_over_the_bus_ends_within_budget(serve, frozen):
    """The 2026-07-28 era touches Redis through the bus (a resource update is published
    to the other workers, whose subscribers are read from the session store): a tool run
    on the request's own thread spends the request's budget."""
    server = Server("notifier")

    @server.tool()
    def touch() -> str:
        """Change a resource (context-free: runs on the request's thread)."""
        server.notify_resource_updated("file:///a")
        return "done"

    a = serve(server, **relayed(frozen.url, store_budget=1.0))
    params = {"name": "touch", "arguments": {}}
    assert post_modern(a.url, "tools/call", params).status_code == 200
    with frozen.paused():
        response, took = timed(lambda: requests.post(
            a.url, json=modern_request("tools/call", params),
            headers=modern_headers("tools/call", "touch"), timeout=60))
        assert took < 1.0 + SLACK, took
        assert response.status_code == 200  # the change stands here; relaying it failed
    assert post_modern(a.url, "tools/call", params).status_code == 200
