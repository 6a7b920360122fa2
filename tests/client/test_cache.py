"""The client's response cache: ``ttlMs`` freshness, keys, invalidation, MRTR retries."""

from __future__ import annotations

import pytest

from mcpsync import Client, HostHandlers, ProtocolOptions, Server, ServerLimits
from mcpsync.client.cache import ResponseCache, cache_key
from tests.client.scripted import Scripted
from tests.helpers import WAIT
from tests.wire import WireRecorder

MODERN = "2026-07-28"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_server(ttl_ms: int = 30_000) -> tuple[Server, WireRecorder]:
    server = Server("cached", request_state_key="k",
                    protocol=ProtocolOptions(cache_ttl_ms=ttl_ms), limits=ServerLimits(page_size=2))
    for name in ("a", "b", "c"):
        server.add_tool(lambda: 1, name=name)

    @server.resource("notes://{title}")
    def note(title: str) -> str:
        return f"note {title}"

    return server, WireRecorder().install(server)


def asked(recorder: WireRecorder, method: str) -> int:
    return sum(1 for m in list(recorder.methods.values()) if m == method)


@pytest.fixture
def clock():
    return Clock()


def test_fresh_until_ttl_and_pages_keyed_by_cursor(clock):
    server, recorder = make_server()
    with Client.memory(server, protocol_version=MODERN, cache=ResponseCache(clock)) as client:
        assert [t.name for t in client.list_tools()] == ["a", "b", "c"]
        assert asked(recorder, "tools/list") == 2  # two pages, each its own entry
        client.list_tools()
        assert asked(recorder, "tools/list") == 2
        clock.now += 29.999
        client.list_tools()
        assert asked(recorder, "tools/list") == 2
        clock.now += 0.001  # now == received + ttl: stale
        client.list_tools()
        assert asked(recorder, "tools/list") == 4
        client.ping()  # liveness is never answered from the cache
        client.ping()
        assert asked(recorder, "server/discover") == 3


def test_reads_keyed_by_uri_and_invalidated_by_updates(clock):
    server, recorder = make_server()
    with Client.memory(server, protocol_version=MODERN, cache=ResponseCache(clock)) as client:
        assert client.read_resource("notes://x").text == "note x"
        client.read_resource("notes://x")
        client.read_resource("notes://y")
        assert asked(recorder, "resources/read") == 2
        with client.listen(tools=False, prompts=False, resources=False,
                           resource_uris=["notes://x"]) as sub:
            server.notify_resource_updated("notes://x")
            assert sub.get(WAIT) is not None  # the cache saw it first
        client.read_resource("notes://x")
        client.read_resource("notes://y")
        assert asked(recorder, "resources/read") == 3


def test_list_changed_invalidates_every_page(clock):
    server, recorder = make_server()
    with Client.memory(server, protocol_version=MODERN, cache=ResponseCache(clock)) as client:
        client.list_tools()
        with client.listen() as sub:
            server.add_tool(lambda: 1, name="d")
            assert sub.get(WAIT).method == "notifications/tools/list_changed"
        assert [t.name for t in client.list_tools()] == ["a", "b", "c", "d"]
        assert asked(recorder, "tools/list") == 4


@pytest.mark.parametrize("options", [{"cache": False}, {}])
def test_off_or_zero_ttl_never_caches(options):
    server, recorder = make_server(ttl_ms=0 if not options else 30_000)
    with Client.memory(server, protocol_version=MODERN, **options) as client:
        client.list_prompts()
        client.list_prompts()
        assert asked(recorder, "prompts/list") == 2
        assert client.cache is None or len(client.cache) == 0


def test_handshake_results_carry_no_hints_and_are_not_kept():
    server, recorder = make_server()
    with Client.memory(server) as client:
        client.list_tools()
        client.list_tools()
        assert asked(recorder, "tools/list") == 4


def test_mrtr_retry_results_are_never_cached():
    def script(method, params):
        if "inputResponses" not in params:
            return {"resultType": "input_required", "requestState": "s",
                    "inputRequests": {"q": {"method": "roots/list"}}}
        # A (non-conforming) server that puts cache hints on a retry's answer.
        return {"resultType": "complete", "ttlMs": 60_000, "cacheScope": "public",
                "contents": [{"uri": params["uri"], "text": "t"}]}

    peer = Scripted(script)
    from mcpsync import Root

    try:
        with peer.client(host=HostHandlers(roots=[Root("file:///r")])) as client:
            assert client.read_resource("notes://q").text == "t"
            assert client.read_resource("notes://q").text == "t"
            assert len(peer.sent("resources/read")) == 4
            assert len(client.cache or ()) == 0
    finally:
        peer.close()


def test_store_refuses_answers_that_raced_an_invalidation(clock):
    cache = ResponseCache(clock)
    key = ("tools/list", None)
    generation = cache.generation()
    cache.on_notification("notifications/tools/list_changed", {})
    assert not cache.store(key, {"resultType": "complete", "ttlMs": 1000, "tools": []},
                           generation)
    assert cache.store(key, {"ttlMs": 1000, "tools": []}, cache.generation())
    for bad in (-5, "100", True, None):
        assert not cache.store(("prompts/list", None), {"ttlMs": bad}, cache.generation())


def test_keys_hold_only_result_affecting_params():
    meta = {"_meta": {"progressToken": 1}}
    assert cache_key("tools/call", {"name": "x"}) is None
    assert cache_key("tools/list", meta) == ("tools/list", None)
    assert cache_key("tools/list", {"cursor": "2", **meta}) == ("tools/list", "2")
    assert cache_key("resources/read", {"uri": "a://b", **meta}) == ("resources/read", "a://b")
    assert cache_key("server/discover", meta) == ("server/discover", None)
    assert cache_key("resources/read", {"uri": "a://b", "requestState": "s"}) is None


def test_reads_of_many_uris_stay_within_the_bound(clock):
    # A server handing out long ttlMs on many distinct reads used to grow the cache for as
    # long as the client lived; now the oldest entries go first, by count and by bytes.
    server, recorder = make_server()
    cache = ResponseCache(clock, max_entries=8, max_bytes=10_000)
    with Client.memory(server, protocol_version=MODERN, cache=cache) as client:
        for n in range(50):
            client.read_resource(f"notes://{n}")
        assert len(cache) == 8 and 0 < cache.size_bytes <= 10_000
        client.read_resource("notes://49")  # the newest is still kept...
        assert asked(recorder, "resources/read") == 50
        client.read_resource("notes://0")  # ...the oldest is gone
        assert asked(recorder, "resources/read") == 51


def test_a_result_larger_than_the_whole_bound_is_not_kept(clock):
    cache = ResponseCache(clock, max_bytes=100)
    big = {"ttlMs": 1000, "contents": [{"uri": "a://b", "text": "x" * 200}]}
    assert not cache.store(("resources/read", "a://b"), big, cache.generation())
    assert len(cache) == 0 and cache.size_bytes == 0
