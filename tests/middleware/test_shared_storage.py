"""Guards with Redis storage hold across processes: two servers standing for two workers
(each its own guard objects, as two processes would have) on one real redis-server. And
the parts that need no transport: trusted proxies, cache bounds, private answers, a
worker that died holding a concurrency slot, Redis going away."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, Server, ToolAnnotations
from mcpsync.dispatch.inbound import TransportContext
from mcpsync.errors import STORE_UNAVAILABLE
from mcpsync.middleware import ConcurrencyLimit, RateLimit, RateLimitedError, ResponseCache
from mcpsync.middleware.request import client_address, networks
from tests.helpers import WAIT, wait_until
from tests.services import RedisServer, require_redis_library, unique_prefix

require_redis_library()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


def worker(guards: list[Any], seen: list[str]) -> Server:
    """One 'worker process': its own server and guard objects."""
    server = Server("worker")
    for guard in guards:
        server.add_middleware(guard)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def look(ctx: HandlerContext, q: str) -> str:
        seen.append(q)
        return f"{q}#{len(seen)}"

    return server


def test_a_rate_limit_in_redis_is_one_limit_for_every_worker(redis_url: str) -> None:
    name = unique_prefix("rate")
    seen: list[str] = []
    workers = [worker([RateLimit("5/minute", key="ip", storage=redis_url, name=name)], seen)
               for _ in range(2)]
    outcomes: list[str] = []
    with Client.memory(workers[0]) as a, Client.memory(workers[1]) as b:
        for i in range(12):
            try:
                (a, b)[i % 2].call_tool("look", {"q": str(i)})
                outcomes.append("ok")
            except RateLimitedError as exc:
                assert 0 < exc.retry_after <= 60
                outcomes.append("refused")
    assert outcomes.count("ok") == 5 and len(seen) == 5
    assert outcomes[:5] == ["ok"] * 5


def test_several_limits_in_one_rule_each_hold() -> None:
    seen: list[str] = []
    server = worker([RateLimit("2/second;3/hour", key="method")], seen)
    with Client.memory(server) as client:
        client.call_tool("look", {"q": "1"})
        client.call_tool("look", {"q": "2"})
        with pytest.raises(RateLimitedError) as first:
            client.call_tool("look", {"q": "3"})
        assert first.value.data["limit"] == "2 per 1 second"
    assert len(seen) == 2


def test_a_concurrency_limit_in_redis_holds_across_workers(redis_url: str) -> None:
    name = unique_prefix("conc")
    started, release = threading.Event(), threading.Event()
    servers = []
    for _ in range(2):
        server = Server("worker")
        server.add_middleware(ConcurrencyLimit(1, key="tool", storage=redis_url, name=name))

        @server.tool()
        def hold() -> str:
            started.set()
            release.wait(WAIT)
            return "held"

        servers.append(server)
    with Client.memory(servers[0]) as a, Client.memory(servers[1]) as b:
        results: list[str] = []
        thread = threading.Thread(target=lambda: results.append(
            a.call_tool("hold").content[0].text), name="test-guards-redis-hold")
        thread.start()
        try:
            assert started.wait(WAIT)
            with pytest.raises(RateLimitedError):
                b.call_tool("hold")  # the other worker: the slot is taken in Redis
        finally:
            release.set()
            thread.join(WAIT)
        assert results == ["held"]
        assert b.call_tool("hold").content[0].text == "held"


def test_a_slot_held_by_a_worker_that_died_frees_itself_when_its_lease_ends(
        redis_url: str) -> None:
    name = unique_prefix("lease")
    server = Server("worker")
    server.add_middleware(ConcurrencyLimit(1, key="method", storage=redis_url, name=name,
                                           lease=0.5))

    @server.tool()
    def quick() -> str:
        return "ran"

    # Another worker took the slot and was killed mid-call: nobody gives it back.
    lease = 1.0
    dead = ConcurrencyLimit(1, key="method", storage=redis_url, name=name, lease=lease)
    taken = time.monotonic()
    assert dead._slots.acquire("m=tools/call", 1) is not None
    dead.close()  # its process is gone: nobody renews its lease any more
    ran: list[str] = []
    with Client.memory(server) as mcp:
        try:
            first = mcp.call_tool("quick")
        except RateLimitedError:
            pass  # refused while the dead worker's lease holds
        else:
            # Let through: only once that lease had ended (a host slow enough that the
            # client's start took longer than the lease), never while it held.
            assert time.monotonic() - taken >= lease, "a held slot let a second call in"
            ran.append(first.content[0].text)

        def passes() -> bool:
            try:
                ran.append(mcp.call_tool("quick").content[0].text)
            except RateLimitedError:
                return False
            return True

        if not ran:
            wait_until(passes, timeout=WAIT, interval=0.1,
                       message="the dead worker's slot never freed")
    assert ran == ["ran"]


def test_a_call_running_past_its_lease_keeps_its_slot(redis_url: str) -> None:
    name = unique_prefix("renew")
    lease = 0.6
    started, release = threading.Event(), threading.Event()
    guards = [ConcurrencyLimit(1, key="method", storage=redis_url, name=name, lease=lease)
              for _ in range(2)]
    servers = []
    for guard in guards:
        server = Server("worker")
        server.add_middleware(guard)

        @server.tool()
        def hold() -> str:
            started.set()
            release.wait(WAIT)
            return "held"

        servers.append(server)
    with Client.memory(servers[0]) as a, Client.memory(servers[1]) as b:
        results: list[str] = []
        thread = threading.Thread(target=lambda: results.append(
            a.call_tool("hold").content[0].text), name="test-guards-renew-hold")
        thread.start()
        try:
            assert started.wait(WAIT)
            began = time.monotonic()
            # Three leases go by while the call runs; its slot is still taken all along.
            wait_until(lambda: time.monotonic() - began > 3 * lease, timeout=WAIT,
                       interval=0.1)
            with pytest.raises(RateLimitedError):
                b.call_tool("hold")
        finally:
            release.set()
            thread.join(WAIT)
        assert results == ["held"]
    # With no call running, the renewing threads end by themselves (close() not needed).
    wait_until(lambda: not any(t.name == "mcpsync-concurrency-leases"
                               for t in threading.enumerate()),
               timeout=WAIT, message="a lease renewing thread outlived its calls")


def test_the_shared_cache_serves_each_principal_its_own_answer(redis_url: str) -> None:
    name = unique_prefix("cache")
    seen: list[str] = []
    workers = [worker([ResponseCache(60, storage=redis_url, name=name)], seen)
               for _ in range(2)]
    auth: dict[str, str] = {}

    def who(message: Any, next_: Any) -> None:
        from mcpsync import current_transport

        transport = current_transport()
        if transport is not None and auth:
            transport.auth = dict(auth)
        next_(message)

    for server in workers:
        server.recv_middleware.append(who)
    with Client.memory(workers[0]) as a, Client.memory(workers[1]) as b:
        auth["sub"] = "alice"
        alice = a.call_tool("look", {"q": "x"}).content[0].text
        assert b.call_tool("look", {"q": "x"}).content[0].text == alice  # shared in Redis
        auth["sub"] = "bob"
        bob = b.call_tool("look", {"q": "x"}).content[0].text
        assert bob != alice
        assert a.call_tool("look", {"q": "x"}).content[0].text == bob
    assert seen == ["x", "x"]


def test_a_private_answer_is_never_shared_even_when_answers_are(redis_url: str) -> None:
    server = Server("private")
    cache = ResponseCache(60, vary_on_principal=False)
    server.add_middleware(cache)
    auth: dict[str, str] = {}

    def who(message: Any, next_: Any) -> None:
        from mcpsync import current_transport

        transport = current_transport()
        if transport is not None:
            transport.auth = dict(auth)
        next_(message)

    server.recv_middleware.append(who)
    count = {"public": 0, "private": 0}

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def public() -> dict[str, Any]:
        count["public"] += 1
        return {"content": [{"type": "text", "text": f"public {count['public']}"}]}

    @server.method_handler("tools/call", replace=True)
    def calls(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        name = params["name"]
        count[name] += 1
        result: dict[str, Any] = {"content": [{"type": "text",
                                               "text": f"{name} {count[name]}"}]}
        if name == "private":
            result["cacheScope"] = "private"
        return result

    cache.tools = frozenset({"public", "private"})  # (a method handler has no annotations)
    with Client.memory(server) as client:
        auth["sub"] = "alice"
        assert client.call_tool("private").content[0].text == "private 1"
        assert client.call_tool("public").content[0].text == "public 1"
        auth["sub"] = "bob"
        assert client.call_tool("public").content[0].text == "public 1"  # shared
        assert client.call_tool("private").content[0].text == "private 2"  # bob's own
        assert client.call_tool("private").content[0].text == "private 2"
    assert count == {"public": 1, "private": 2}


def test_a_ttl_ms_hint_shortens_an_entry_and_zero_stores_nothing() -> None:
    server = Server("hints")
    server.add_middleware(ResponseCache(60, tools=["zero"]))
    runs = {"n": 0}

    @server.method_handler("tools/call", replace=True)
    def calls(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        runs["n"] += 1
        return {"content": [{"type": "text", "text": str(runs["n"])}], "ttlMs": 0}

    with Client.memory(server) as client:
        assert [client.call_tool("zero").content[0].text for _ in range(2)] == ["1", "2"]


def test_the_memory_cache_is_bounded_in_bytes() -> None:
    server = Server("bounded")
    cache = ResponseCache(60, tools=["blob"], max_bytes=4096, max_entry_bytes=2048)
    server.add_middleware(cache)

    @server.tool()
    def blob(n: int, size: int = 500) -> str:
        return str(n) * size

    with Client.memory(server) as client:
        for n in range(30):
            client.call_tool("blob", {"n": n})
        client.call_tool("blob", {"n": 1, "size": 5000})  # over max_entry_bytes: not kept
    entries = cache._entries
    assert hasattr(entries, "size") and 0 < entries.size <= 4096


def test_x_forwarded_for_is_believed_only_from_a_trusted_proxy() -> None:
    class Ctx:
        def __init__(self, remote: str, forwarded: str) -> None:
            self.transport = TransportContext("http", remote_addr=remote,
                                              headers={"X-Forwarded-For": forwarded})

    proxies = networks(["10.0.0.0/8", "127.0.0.1"])
    # From the trusted proxy: the right-most address that is not a proxy of ours.
    assert client_address(Ctx("127.0.0.1", "6.6.6.6, 203.0.113.9, 10.1.2.3"),  # type: ignore[arg-type]
                          proxies) == "203.0.113.9"
    # From anyone else the header is a claim, not an address.
    assert client_address(Ctx("198.51.100.4", "1.2.3.4"), proxies) == "198.51.100.4"  # type: ignore[arg-type]
    assert client_address(Ctx("127.0.0.1", "1.2.3.4"), ()) == "127.0.0.1"  # type: ignore[arg-type]


def test_a_guard_whose_redis_is_gone_fails_the_request_and_never_runs_the_tool(
        caplog: pytest.LogCaptureFixture) -> None:
    with RedisServer() as redis_server:
        url = redis_server.url
        seen: list[str] = []
        server = worker([RateLimit("100/minute", storage=url, name=unique_prefix("gone"))],
                        seen)
        redis_server.stop()
        with Client.memory(server) as client, pytest.raises(Exception) as failed:
            client.call_tool("look", {"q": "x"})
        # the one store-unavailable text (errors.STORE_UNAVAILABLE), never where Redis is
        assert str(failed.value) == STORE_UNAVAILABLE
        assert str(redis_server.port) not in str(failed.value)
    assert seen == []  # refused, not let through unguarded
    # the log says which store, for the operator (a warning: a store away is not a bug)
    assert any("storage unavailable" in r.getMessage() for r in caplog.records
               if r.levelno == logging.WARNING), caplog.text


def test_a_key_of_your_own_and_a_combined_key_count_apart() -> None:
    seen: list[str] = []
    plans = {"free": "free", "paid": "paid"}

    def plan(ctx: HandlerContext, params: dict[str, Any]) -> str:
        return plans[str(params.get("arguments", {}).get("q", "free"))]

    server = worker([RateLimit("1/minute", key=plan, strategy="fixed-window"),
                     RateLimit("2/minute", key=("principal", "tool"), name="combined")],
                    seen)
    with Client.memory(server) as client:
        client.call_tool("look", {"q": "free"})
        with pytest.raises(RateLimitedError):
            client.call_tool("look", {"q": "free"})  # the "free" count is spent
        client.call_tool("look", {"q": "paid"})  # "paid" is its own count
    assert seen == ["free", "paid"]
    with pytest.raises(ValueError, match="key="):
        RateLimit("1/minute", key="tenant")
    with pytest.raises(ValueError, match="strategy="):
        RateLimit("1/minute", strategy="leaky-bucket")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_read_only_tool_run_as_a_task_is_never_answered_from_the_cache(version: str) -> None:
    server = Server("tasks")
    server.add_middleware(ResponseCache(60))
    runs: list[int] = []

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), task="optional")
    def report() -> int:
        runs.append(1)
        return len(runs)

    with Client.memory(server, protocol_version=version) as client:
        first = client.start_task("report")
        second = client.start_task("report")
        assert first.id != second.id  # two tasks, not one task's id twice
        assert {first.result(timeout=WAIT).structured_content["result"],
                second.result(timeout=WAIT).structured_content["result"]} == {1, 2}
