"""``Server.mount``: a server's tools, prompts, resources and templates served by another
under a prefix (issue 28, "Composition").

The same checks over memory, a real stdio subprocess (``tests/server/mount_server.py``,
which mounts its weather server) and real HTTP, in both eras: prefixed listing, routed
calls, reads by prefixed URIs, prompts and completions, unknown prefixed names failing as
unknown own names, the mounted server's middleware and ``ctx.state``, and a tool added to
the mounted server while serving announced to a connected client. Then, in this process:
pagination over the merged list, lifespan, clashes, cycles, nesting, resource updates, and
a mounted server whose surface is only method handlers (as ``Server.proxy`` makes).
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, HostHandlers, InvalidParamsError, MCPError, Server
from mcpsync.errors import ResourceNotFoundError
from tests.helpers import WAIT
from tests.server.mount_server import build, build_weather
from tests.serving import client_over

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
VERSIONS = (LEGACY, MODERN)
TRANSPORTS = ("memory", "stdio", "http")
MODULE = "tests.server.mount_server"


@contextlib.contextmanager
def connect(kind: str, version: str, **options: Any) -> Iterator[Client]:
    """A client of a fresh mount_server parent over ``kind`` (stdio: a new process)."""
    with client_over(kind, build(), MODULE, version, **options) as client:
        yield client


def text(result: Any) -> str:
    return str(result.content[0].text)


# -- the surface, over every transport and era ----------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_the_mounted_surface_is_served_under_the_prefix(kind: str, version: str) -> None:
    with connect(kind, version) as client:
        tools = {t.name: t for t in client.list_tools()}
        assert list(tools) == ["hello", "grow", "weather_forecast", "weather_where",
                               "weather_secret", "weather_calls_seen", "weather_link"]
        assert tools["weather_forecast"].description == "Tomorrow's weather in a city."
        assert text(client.call_tool("weather_forecast", {"city": "Oslo"})) == "Oslo: sunny"
        assert text(client.call_tool("hello")) == "hello from main"
        # The mounted server's handler sees its own lifespan state as ctx.state.
        assert text(client.call_tool("weather_where")) == "Blindern"
        # A resource link in a mounted tool's result points through the parent.
        assert client.call_tool("weather_link").content[0].uri == (
            "weather://weather/cities/Oslo")

        assert [r.uri for r in client.list_resources()] == ["main://readme",
                                                            "weather://weather/about"]
        assert [t.uri_template for t in client.list_resource_templates()] == [
            "weather://weather/cities/{city}"]
        read = client.read_resource("weather://weather/cities/Bergen")
        assert [(c.uri, c.text) for c in read.contents] == [
            ("weather://weather/cities/Bergen", "Bergen weather")]
        assert client.read_resource("weather://weather/about").contents[0].text == (
            "the weather server")

        assert [p.name for p in client.list_prompts()] == ["weather_ask"]
        prompt = client.get_prompt("weather_ask", {"city": "Oslo"})
        assert prompt.messages[0].content.text == "What is the weather in Oslo?"
        assert client.complete("weather_ask", "city", "Os").values == ["Oslo", "Osaka"]
        assert client.complete("weather://weather/cities/{city}", "city", "Ber").values == [
            "Bergen", "Berlin"]

        caps = client.server_capabilities
        assert {"resources", "prompts", "completions"} <= set(caps)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_unknown_prefixed_names_fail_as_unknown_own_names(kind: str, version: str) -> None:
    with connect(kind, version) as client:
        with pytest.raises(InvalidParamsError) as own:
            client.call_tool("nope")
        with pytest.raises(InvalidParamsError) as mounted:
            client.call_tool("weather_nope")
        assert (own.value.message, mounted.value.message) == (
            "Unknown tool: nope", "Unknown tool: weather_nope")
        assert mounted.value.data == {"name": "weather_nope"}

        with pytest.raises(MCPError) as own_prompt:
            client.get_prompt("nope")
        with pytest.raises(MCPError) as mounted_prompt:
            client.get_prompt("weather_nope")
        assert own_prompt.value.code == mounted_prompt.value.code
        assert mounted_prompt.value.message == "Unknown prompt: weather_nope"

        with pytest.raises(ResourceNotFoundError) as own_uri:
            client.read_resource("main://nope")
        with pytest.raises(ResourceNotFoundError) as mounted_uri:
            client.read_resource("weather://weather/nope")
        assert own_uri.value.code == mounted_uri.value.code
        assert mounted_uri.value.message == "Resource not found: weather://weather/nope"
        # The un-prefixed URI is not the parent's: the mounted server is only under it.
        with pytest.raises(ResourceNotFoundError):
            client.read_resource("weather://about")
        with pytest.raises(InvalidParamsError, match="Unknown tool: forecast"):
            client.call_tool("forecast", {"city": "Oslo"})


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_the_mounted_servers_middleware_runs(kind: str, version: str) -> None:
    with connect(kind, version) as client:
        result = client.call_tool("weather_forecast", {"city": "Oslo"})
        assert (result.meta or {}).get("weather/sent") is True     # its send middleware
        assert "weather/sent" not in (client.call_tool("hello").meta or {})  # not the parent's
        with pytest.raises(MCPError, match="refused by weather's middleware") as refused:
            client.call_tool("weather_secret")
        assert refused.value.code == -32001
        # Its receive middleware saw the un-prefixed names.
        seen = json.loads(text(client.call_tool("weather_calls_seen")))
        assert seen[:2] == ["forecast", "secret"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_a_tool_added_to_the_mounted_server_is_announced(kind: str, version: str) -> None:
    changed = threading.Event()

    def on_note(note: Any) -> None:
        if "tools" in str(getattr(note, "method", note)):
            changed.set()

    name = "t" + uuid.uuid4().hex[:8]
    with connect(kind, version) as client, client.listen(on_notification=on_note):
        assert f"weather_{name}" not in {t.name for t in client.list_tools()}
        assert text(client.call_tool("grow", {"name": name})) == "ok"
        assert changed.wait(WAIT), "no tools list_changed reached the parent's client"
        assert f"weather_{name}" in {t.name for t in client.list_tools()}
        assert text(client.call_tool(f"weather_{name}")) == f"grown {name}"


def test_the_stdio_parent_starts_and_stops_the_mounted_server(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    with client_over("stdio", None, MODULE, LEGACY,
                     env={"MCPSYNC_TEST_MOUNT_LOG": str(log)}) as client:
        assert text(client.call_tool("weather_where")) == "Blindern"
        assert log.read_text().split() == ["startup"]
    # Closing the client ends the process, whose shutdown stops the mounted server.
    assert log.read_text().split() == ["startup", "shutdown"]


# -- in this process ----------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_the_parents_pages_cover_the_merged_list(version: str) -> None:
    parent = build()
    with Client.memory(parent, protocol_version=version, timeout=WAIT) as client:
        names: list[str] = []
        params: dict[str, Any] = {}
        pages = 0
        while True:
            result = client.request("tools/list", params)
            assert len(result["tools"]) <= 3   # the parent's page_size
            names += [t["name"] for t in result["tools"]]
            pages += 1
            if "nextCursor" not in result:
                break
            params = {"cursor": result["nextCursor"]}
        # 2 own tools and 5 mounted ones (listed by the weather server 1 per page).
        assert pages == 3
        assert names == ["hello", "grow", "weather_forecast", "weather_where",
                         "weather_secret", "weather_calls_seen", "weather_link"]
        with pytest.raises(InvalidParamsError, match="Invalid cursor"):
            client.request("tools/list", {"cursor": "bogus"})


def test_lifespan_startup_starts_and_shutdown_stops_the_mounted_server() -> None:
    events: list[str] = []

    def lifespan(server: Server) -> Iterator[str]:
        events.append("up")
        yield "child state"
        events.append("down")

    child, parent = Server("child", lifespan=lifespan), Server("parent")

    @child.tool()
    def state(ctx: HandlerContext) -> str:
        return f"{ctx.state} / {ctx.server.name}"

    parent.mount(child, prefix="c")
    assert events == []
    parent.start()
    assert events == ["up"]
    with Client.memory(parent, timeout=WAIT) as client:
        assert text(client.call_tool("c_state")) == "child state / child"
    parent.stop()
    assert events == ["up", "down"]

    # Mounted into a parent that already started: started at once.
    late = Server("late", lifespan=lifespan)
    parent.start()
    parent.mount(late, prefix="late")
    assert events == ["up", "down", "up", "up"]
    parent.stop()
    assert events.count("down") == 3


def test_no_prefix_keeps_names_and_the_parents_own_item_wins_a_clash() -> None:
    parent = Server("parent")

    @parent.tool()
    def forecast(city: str) -> str:
        return "the parent's forecast"

    parent.mount(build_weather())
    with Client.memory(parent, timeout=WAIT) as client:
        names = [t.name for t in client.list_tools()]
        assert names.count("forecast") == 1 and "where" in names
        assert text(client.call_tool("forecast", {"city": "x"})) == "the parent's forecast"
        assert text(client.call_tool("where")) == "Blindern"
        assert client.read_resource("weather://about").contents[0].text == (
            "the weather server")


def test_mounting_that_makes_a_cycle_or_repeats_is_refused() -> None:
    a, b, c = Server("a"), Server("b"), Server("c")
    with pytest.raises(ValueError, match="cycle"):
        a.mount(a)
    a.mount(b, prefix="b")
    b.mount(c, prefix="c")
    with pytest.raises(ValueError, match="cycle"):
        c.mount(a, prefix="a")
    with pytest.raises(ValueError, match="already mounted"):
        a.mount(b, prefix="again")
    with pytest.raises(ValueError, match="prefix"):
        a.mount(Server("d"), prefix="no/slash")
    with pytest.raises(TypeError):
        a.mount("b")  # type: ignore[arg-type]


def test_concurrent_mounts_both_ways_make_no_cycle() -> None:
    for _ in range(20):
        a, b = Server("a"), Server("b")
        barrier = threading.Barrier(2)
        failed: list[BaseException] = []

        def mount(parent: Server, child: Server, barrier: threading.Barrier = barrier,
                  failed: list[BaseException] = failed) -> None:
            barrier.wait(WAIT)
            try:
                parent.mount(child)
            except ValueError as exc:
                failed.append(exc)

        threads = [threading.Thread(target=mount, args=pair, name=f"mount-{i}")
                   for i, pair in enumerate(((a, b), (b, a)))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert len(failed) == 1


def test_nested_mounts_prefix_twice_and_announce_through_both() -> None:
    inner, middle, outer = Server("inner"), Server("middle"), Server("outer")

    @inner.tool()
    def ping_inner() -> str:
        return "pong"

    @inner.resource("data://x/{id}")
    def item(id: str) -> str:
        return f"item {id}"

    middle.mount(inner, prefix="in")
    outer.mount(middle, prefix="mid")
    changed = threading.Event()
    with Client.memory(outer, timeout=WAIT, host=HostHandlers(notifications={
            "notifications/tools/list_changed": lambda params: changed.set()})) as client:
        assert [t.name for t in client.list_tools()] == ["mid_in_ping_inner"]
        assert text(client.call_tool("mid_in_ping_inner")) == "pong"
        assert [t.uri_template for t in client.list_resource_templates()] == [
            "data://mid/in/x/{id}"]
        read = client.read_resource("data://mid/in/x/7")
        assert (read.contents[0].uri, read.contents[0].text) == ("data://mid/in/x/7", "item 7")
        client.ping()
        inner.add_tool(lambda: "new", name="late")
        assert changed.wait(WAIT)
        assert text(client.call_tool("mid_in_late")) == "new"


def test_a_mounted_servers_resource_update_reaches_the_parents_subscribers() -> None:
    parent, weather = Server("parent"), build_weather()
    parent.mount(weather, prefix="weather")
    updated: list[str] = []
    got = threading.Event()

    def on_updated(params: dict[str, Any]) -> None:
        updated.append(params["uri"])
        got.set()

    with Client.memory(parent, protocol_version=LEGACY, timeout=WAIT,
                       host=HostHandlers(notifications={
                           "notifications/resources/updated": on_updated})) as client:
        client.subscribe("weather://weather/about")
        weather.notify_resource_updated("weather://about")
        assert got.wait(WAIT)
        assert updated == ["weather://weather/about"]


def test_a_server_defined_by_method_handlers_mounts_like_any_other() -> None:
    """What ``Server.proxy`` makes: a plain Server whose surface methods forward to
    another server (here through a real in-memory client)."""
    remote = build_weather()
    forwarder = Server("forwarder")
    upstream = Client.memory(remote, timeout=WAIT, host=HostHandlers(notifications={
        "notifications/tools/list_changed":
            lambda params: forwarder.notify_list_changed("tools")}))
    for method in ("tools/list", "tools/call", "resources/list", "resources/templates/list",
                   "resources/read", "prompts/list", "prompts/get", "completion/complete"):
        def forward(ctx: HandlerContext, params: dict[str, Any], method: str = method
                    ) -> dict[str, Any]:
            return upstream.request(method, {k: v for k, v in params.items() if k != "_meta"})
        forwarder.method_handler(method)(forward)

    parent = Server("parent")
    parent.mount(forwarder, prefix="fw")
    changed = threading.Event()
    with upstream, Client.memory(parent, timeout=WAIT, host=HostHandlers(notifications={
            "notifications/tools/list_changed": lambda params: changed.set()})) as client:
        assert "fw_forecast" in {t.name for t in client.list_tools()}
        assert text(client.call_tool("fw_forecast", {"city": "Rome"})) == "Rome: sunny"
        assert client.read_resource("weather://fw/cities/Rome").contents[0].uri == (
            "weather://fw/cities/Rome")
        assert client.get_prompt("fw_ask", {"city": "Rome"}).messages
        assert client.complete("fw_ask", "city", "Pa").values == ["Paris"]
        assert {"resources", "prompts", "completions"} <= set(client.server_capabilities)
        with pytest.raises(InvalidParamsError) as unknown:
            client.call_tool("fw_nope")
        assert unknown.value.message == "Unknown tool: fw_nope"
        with pytest.raises(ResourceNotFoundError, match="weather://fw/nope"):
            client.read_resource("weather://fw/nope")
        client.ping()
        remote.add_tool(lambda: "fresh", name="fresh")   # live, through the forwarder
        assert changed.wait(WAIT)
        assert text(client.call_tool("fw_fresh")) == "fresh"


@pytest.mark.parametrize("version", VERSIONS)
def test_mounted_tools_keep_their_task_support(version: str) -> None:
    # Tasks cross a mount (issue 34): more in tests/mounts/test_mount_tasks.py.
    child, parent = Server("child"), Server("parent")

    @child.tool(task="optional")
    def slow() -> str:
        return "done"

    parent.mount(child, prefix="c")
    with Client.memory(parent, protocol_version=version, timeout=WAIT) as client:
        listed = client.request("tools/list", {})["tools"]
        assert [t["name"] for t in listed] == ["c_slow"]
        assert listed[0]["execution"] == {"taskSupport": "optional"}
        handle = client.start_task("c_slow")
        assert handle.result().text == "done"


def test_a_request_the_mounted_servers_middleware_drops_is_answered() -> None:
    child, parent = Server("child"), Server("parent")
    child.add_tool(lambda: "x", name="x")
    child.recv_middleware.append(lambda message, next_: None)  # drops everything
    parent.mount(child, prefix="c")
    with Client.memory(parent, timeout=WAIT) as client:
        with pytest.raises(MCPError, match="dropped") as dropped:
            client.call_tool("c_x")
        assert dropped.value.code == -32603
