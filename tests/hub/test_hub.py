"""``Client.from_config``: three servers (stdio, HTTP, one that fails to start) as one
client, names prefixed as a mount prefixes them, calls routed, servers started and listed
in parallel, the failing one reported by name, everything closed once."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import Client, InvalidParamsError, RequestTimeoutError, Server
from mcpsync.hub import Hub, ServerUnavailableError
from mcpsync.protocol.jsonrpc import Message, Request
from tests.helpers import run_threads
from tests.hub.servers import build_notes
from tests.serving import ROOT, RunningServer


def _stdio(which: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "tests.hub.servers", which],
            "cwd": str(ROOT), **extra}


@pytest.fixture
def notes_url() -> Iterator[str]:
    app = build_notes().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


@pytest.fixture
def config(notes_url: str) -> dict[str, Any]:
    return {"mcpServers": {
        "calc": _stdio("calc", env={"HUB_TEST_WHO": "${WHO:-nobody} via config"}),
        "notes": {"type": "http", "url": notes_url, "headers": {"X-Hub": "yes"}},
        "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
    }}


@pytest.fixture
def hub(config: dict[str, Any]) -> Iterator[Hub]:
    with Client.from_config(config, timeout=30, environ={"WHO": "alice"}) as hub:
        yield hub


def test_three_servers_one_failing_reported_by_name(config, caplog) -> None:
    with caplog.at_level(logging.WARNING, "mcpsync.hub"), Client.from_config(
            config, timeout=30) as hub:
        assert list(hub.clients) == ["calc", "notes"]
        assert list(hub.failures) == ["broken"]
        assert "status 3" in str(hub.failures["broken"])
        assert any("'broken' failed to start" in r.getMessage() for r in caplog.records)
        assert repr(hub).startswith("<Hub 2 of 3 servers: calc (connected, ")
        assert "broken (failed: " in repr(hub)


def test_tools_are_prefixed_and_calls_routed(hub: Hub) -> None:
    names = [tool.name for tool in hub.list_tools()]
    assert names == ["calc_add", "calc_whoami", "calc_slow", "calc_link", "notes_add"]
    assert hub.call_tool("calc_add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    assert hub.call_tool("notes_add", {"text": "milk"}).text == "noted: milk"
    # env of a stdio entry, ${WHO:-nobody} expanded from the environ given
    assert hub.call_tool("calc_whoami").text == "alice via config"


def test_a_call_routes_without_a_listing_first(hub: Hub) -> None:
    assert hub.call_tool("notes_add", {"text": "x"}).text == "noted: x"


def test_unknown_and_unavailable_names(hub: Hub) -> None:
    with pytest.raises(InvalidParamsError, match="Unknown tool: nothing"):
        hub.call_tool("nothing")
    with pytest.raises(InvalidParamsError, match="Unknown tool"):
        hub.call_tool("calc_nothing")  # calc's own answer
    with pytest.raises(ServerUnavailableError, match="'broken' is not available: it failed "
                                                      "to start") as caught:
        hub.call_tool("broken_anything")
    assert caught.value.server == "broken"


def test_resources_templates_and_prompts_follow_the_mount_rule(hub: Hub) -> None:
    assert [r.uri for r in hub.list_resources()] == ["memo://calc/pi", "memo://notes/pi"]
    assert [t.uri_template for t in hub.list_resource_templates()] == [
        "memo://calc/square/{n}"]
    read = hub.read_resource("memo://notes/pi")
    assert read.text == "a note about pi" and read.contents[0].uri == "memo://notes/pi"
    assert hub.read_resource("memo://calc/square/3").text == "9"
    assert [p.name for p in hub.list_prompts()] == ["calc_explain", "notes_summarize"]
    prompt = hub.get_prompt("calc_explain", {"topic": "tides"})
    assert prompt.messages[0].content.text == "Explain tides simply."


def test_uris_in_results_come_back_prefixed_and_readable(hub: Hub) -> None:
    link, embedded = hub.call_tool("calc_link").content
    assert link.uri == "memo://calc/pi" and embedded.resource.uri == "memo://calc/pi"
    assert hub.read_resource(link.uri).text == "3.14159"


def test_each_call_keeps_its_deadline(hub: Hub) -> None:
    with pytest.raises(RequestTimeoutError):
        hub.call_tool("calc_slow", {"seconds": 30}, timeout=0.5)
    assert hub.call_tool("calc_add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_many_threads_share_one_hub(hub: Hub) -> None:
    def one(i: int) -> tuple[int, str]:
        return (hub.call_tool("calc_add", {"a": i, "b": 1}).structured_content["result"],
                hub.call_tool("notes_add", {"text": str(i)}).text)

    assert run_threads(one, 8) == [(i + 1, f"noted: {i}") for i in range(8)]


def _meeting_point(barrier: threading.Barrier) -> Callable[[Message, Callable[[Message],
                                                                                 None]], None]:
    """Receive middleware: ``tools/list`` waits until the other server is asked too."""

    def recv(message: Message, next_: Callable[[Message], None]) -> None:
        if isinstance(message, Request) and message.method == "tools/list":
            barrier.wait()
        next_(message)

    return recv


def test_servers_are_listed_in_parallel() -> None:
    """Each server's tools/list waits for the other's at a barrier: listed one after the
    other, the first would break the barrier (after 10 s) and fail."""
    barrier = threading.Barrier(2, timeout=10)
    apps = []
    for name in ("one", "two"):
        server = Server(name)
        server.tool(name="ping")(lambda: "pong")
        server.recv_middleware.append(_meeting_point(barrier))
        apps.append(server.wsgi_app(path="/mcp"))
    with RunningServer(apps[0], on_stop=apps[0].close) as one, RunningServer(
            apps[1], on_stop=apps[1].close) as two, Client.from_config({"servers": {
                "one": {"type": "http", "url": one.base + "/mcp"},
                "two": {"type": "http", "url": two.base + "/mcp"}}}, timeout=30) as hub:
        assert [t.name for t in hub.list_tools()] == ["one_ping", "two_ping"]
        assert hub.errors == {"one": None, "two": None}


def test_a_listing_that_fails_on_one_server_keeps_the_others(hub: Hub, caplog) -> None:
    hub.clients["calc"].close()  # as if its process had died
    with caplog.at_level(logging.WARNING, "mcpsync.hub"):
        assert [t.name for t in hub.list_tools()] == ["notes_add"]
    assert hub.errors["calc"] is not None and hub.errors["notes"] is None
    assert any("listing tools of server 'calc' failed" in r.getMessage()
               for r in caplog.records)


def test_close_ends_everything_once(config: dict[str, Any]) -> None:
    hub = Client.from_config(config, timeout=30)
    clients = list(hub.clients.values())
    hub.list_tools()
    hub.close()
    hub.close()
    assert hub.closed and all(client.closed for client in clients)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("mcpsync-hub")]
    with pytest.raises(ServerUnavailableError, match="the hub is closed"):
        hub.call_tool("calc_add", {"a": 1, "b": 2})
    assert repr(hub).startswith("<Hub closed: ")


def test_a_config_file_with_comments(tmp_path, notes_url: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{\n  // VS Code's shape\n  \"servers\": {\n"
                    f"    \"notes\": {{\"type\": \"http\", \"url\": {json.dumps(notes_url)}}},"
                    "\n  },\n}\n")
    with Client.from_config(path, timeout=30) as hub:
        assert [t.name for t in hub.list_tools()] == ["notes_add"]


def test_an_entry_that_can_not_be_used_fails_alone(notes_url: str) -> None:
    with Client.from_config({"mcpServers": {
            "bad": {"type": "http"},
            "notes": {"url": notes_url}}}, timeout=30) as hub:
        assert list(hub.clients) == ["notes"]
        assert "'url' must be" in str(hub.failures["bad"])


def test_the_notebook_display(hub: Hub) -> None:
    html = hub._repr_html_()
    assert "<b>calc</b>" in html and "failed: " in html and "<b>broken</b>" in html
    markdown = hub._repr_markdown_()
    assert markdown.splitlines()[0] == "| server | state | command or URL |"
    assert "| **notes** | connected, " in markdown
    assert "X-Hub" not in html + markdown  # headers are never shown
    tools = hub.list_tools()
    assert "calc_add" in tools._repr_markdown_().replace("\\_", "_")


def test_credentials_never_show(notes_url: str) -> None:
    """A command line's ``--api-key=...`` and a URL's password are redacted wherever the
    hub shows its servers; headers are not shown at all."""
    with Client.from_config({"mcpServers": {
            "secret": {"command": sys.executable,
                       "args": ["-c", "raise SystemExit(1)", "--api-key=s3cret"]},
            "notes": {"url": notes_url.replace("http://", "http://user:pa55@"),
                      "headers": {"Authorization": "Bearer t0ken"}}}}, timeout=30) as hub:
        shown = repr(hub) + hub._repr_html_() + hub._repr_markdown_()
    assert "s3cret" not in shown and "pa55" not in shown and "t0ken" not in shown
    assert "secret" in shown and "notes" in shown


def test_completion_routes_like_the_rest(hub: Hub) -> None:
    assert hub.complete("calc_explain", "topic", "t").values == ["tides", "time", "tea"]
    assert hub.complete("memo://calc/square/{n}", "n", "1").values == ["1", "10", "12"]
    with pytest.raises(InvalidParamsError, match="Unknown prompt"):
        hub.complete("nothing", "topic", "t")
