"""What a newcomer meets at a mount (issue 34): a mounted or proxied tool is named as the
client called it, in spans and metrics (not ``tools/call _OTHER``) and in its argument
errors (not the mounted server's own name). Names nobody serves stay ``_OTHER``."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from mcpsync import Client, Server
from mcpsync.errors import MCPError
from tests.helpers import WAIT, require_module
from tests.serving import RunningServer

require_module("opentelemetry.sdk.trace")
from tests.telemetry.conftest import sdk  # noqa: E402,F401  (the fixture)

TRANSPORTS = ["memory:2025-11-25", "memory:2026-07-28", "http:2025-11-25", "http:2026-07-28"]


def calc() -> Server:
    child = Server("calc")

    @child.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @child.prompt()
    def greet(name: str) -> str:
        return f"hello {name}"

    return child


def _client(transport: str, server: Server, stack: contextlib.ExitStack) -> Client:
    kind, version = transport.split(":")
    if kind == "memory":
        return stack.enter_context(Client.memory(server, protocol_version=version,
                                                 timeout=WAIT))
    app = server.wsgi_app(path="/mcp")
    running = stack.enter_context(RunningServer(app, on_stop=app.close))
    return stack.enter_context(Client.http(running.base + "/mcp", protocol_version=version,
                                           timeout=WAIT))


def _server_names(found: Any, attribute: str) -> set[str]:
    return {point.attributes[attribute]
            for point in found.points("mcp.server.operation.duration")
            if attribute in point.attributes}


def _span_names(found: Any) -> set[str]:
    return {span.name for span in found.finished()}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("through", ["mount", "proxy", "mounted-proxy"])
def test_a_known_mounted_or_proxied_tool_is_named_in_spans_and_metrics(
        sdk: Any, transport: str, through: str) -> None:  # noqa: F811  (the fixture)
    if through == "mount":
        server = Server("parent", telemetry=sdk.telemetry)
        server.mount(calc(), prefix="calc")
        tool, prompt = "calc_add", "calc_greet"
    elif through == "proxy":
        server = Server.proxy(calc(), name="proxy", server_options={
            "telemetry": sdk.telemetry})
        tool, prompt = "add", "greet"
    else:
        server = Server("parent", telemetry=sdk.telemetry)
        server.mount(Server.proxy(calc(), name="proxy", telemetry=False), prefix="calc")
        tool, prompt = "calc_add", "calc_greet"
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        client = _client(transport, server, stack)
        assert tool in [t.name for t in client.list_tools()]
        assert client.call_tool(tool, {"a": 1, "b": 2}).structured_content == {"result": 3}
        with pytest.raises(MCPError):
            client.call_tool("calc_made_up", {})
        if through == "mount":
            assert client.get_prompt(prompt, {"name": "Bo"}).messages
    tools = _server_names(sdk, "gen_ai.tool.name")
    assert tools == {tool, "_OTHER"}, tools
    assert f"tools/call {tool}" in _span_names(sdk)
    if through == "mount":
        assert _server_names(sdk, "gen_ai.prompt.name") == {prompt}


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("through", ["mount", "mounted-proxy"])
def test_a_mounted_tools_argument_error_names_the_tool_as_called(version: str,
                                                                 through: str) -> None:
    parent = Server("parent")
    child = calc() if through == "mount" else Server.proxy(calc(), name="proxy")
    parent.mount(child, prefix="calc")
    try:
        with Client.memory(parent, protocol_version=version, timeout=WAIT) as client:
            result = client.request("tools/call", {"name": "calc_add",
                                                   "arguments": {"a": "x"}})
    finally:
        parent.stop()
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "'calc_add'" in text and "'add'" not in text, text
