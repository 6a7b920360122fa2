"""Metric series are chosen by this side, never by a peer (issue 40): a method name that
is not in the method table is recorded as ``_OTHER`` on both sides, and a proxy's client
records its callers' tool names only when its remote listed them. On every transport and
era, through the real SDK (``sdk`` fixture)."""

from __future__ import annotations

import contextlib

import pytest

from mcpsync import Client, Server
from mcpsync.errors import MCPError
from tests.helpers import WAIT
from tests.serving import client_over

TRANSPORTS = ["memory:2025-11-25", "memory:2026-07-28", "http:2025-11-25", "http:2026-07-28"]


def _client(transport: str, server: Server, stack: contextlib.ExitStack, telemetry) -> Client:
    kind, version = transport.split(":")
    client: Client = stack.enter_context(
        client_over(kind, server, None, version, telemetry=telemetry, timeout=WAIT))
    return client


def _methods(sdk, side: str) -> set[str]:
    return {point.attributes["mcp.method.name"]
            for point in sdk.points(f"mcp.{side}.operation.duration")}


def _tool_names(sdk, side: str) -> set[str]:
    return {point.attributes["gen_ai.tool.name"]
            for point in sdk.points(f"mcp.{side}.operation.duration")
            if "gen_ai.tool.name" in point.attributes}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unknown_method_is_other_on_both_sides(sdk, transport):
    server = Server("cardinality", telemetry=sdk.telemetry)
    with contextlib.ExitStack() as stack:
        client = _client(transport, server, stack, sdk.telemetry)
        for n in range(5):
            with pytest.raises(MCPError) as caught:
                client.request(f"made/up-{n}", {})
            assert caught.value.code == -32601
        client.list_tools()
    for side in ("server", "client"):
        methods = _methods(sdk, side)
        assert "_OTHER" in methods, (side, methods)
        assert not any(m.startswith("made/") for m in methods), (side, methods)
        assert "tools/list" in methods  # a known method keeps its name
    spans = [s for s in sdk.finished() if "made/" in s.name
             or "made/" in str(s.attributes.get("mcp.method.name"))]
    assert spans == []


def _remote() -> Server:
    remote = Server("remote")

    @remote.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return remote


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_proxys_client_records_only_the_tool_names_its_remote_listed(sdk, version):
    proxy = Server.proxy(_remote(), telemetry=sdk.telemetry)
    with Client.memory(proxy, protocol_version=version, timeout=WAIT) as caller:
        for n in range(5):
            with pytest.raises(MCPError):
                caller.call_tool(f"secret-{n}", {})
        assert [t.name for t in caller.list_tools()] == ["add"]
        assert caller.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    names = _tool_names(sdk, "client")
    assert names == {"_OTHER", "add"}, names


@pytest.mark.parametrize("transport", ["memory:2026-07-28", "http:2026-07-28"])
def test_a_made_up_protocol_version_is_other(sdk, transport):
    # The same class of defect: mcp.protocol.version comes from the peer's _meta.
    server = Server("cardinality", telemetry=sdk.telemetry)
    with contextlib.ExitStack() as stack:
        client = _client(transport, server, stack, sdk.telemetry)
        for n in range(3):
            with pytest.raises(MCPError) as caught:
                client.request("tools/list", {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": f"1999-01-0{n}"}}, cache=False)
            assert caught.value.code == -32022
    versions = {point.attributes.get("mcp.protocol.version")
                for side in ("server", "client")
                for point in sdk.points(f"mcp.{side}.operation.duration")}
    assert not any(str(v).startswith("1999") for v in versions), versions
    assert "_OTHER" in versions


def _error_types(sdk, side: str) -> set[str]:
    return {str(point.attributes.get(key))
            for point in sdk.points(f"mcp.{side}.operation.duration")
            for key in ("error.type", "rpc.response.status_code")
            if key in point.attributes}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_error_code_mcpsync_does_not_know_is_other_on_both_sides(sdk, transport):
    # A hostile server (or a proxy passing on its remote's answers) picks any code: each
    # made-up code would be its own error.type series on the client, and on the server
    # that answers it. The spec's codes and mcpsync's own keep their number.
    server = Server("cardinality", telemetry=sdk.telemetry)

    @server.method_handler("x/fail")
    def fail(ctx, params):
        raise MCPError("no", code=params["code"])

    made_up = [-31000 - n for n in range(4)] + [7, -32099]
    with contextlib.ExitStack() as stack:
        client = _client(transport, server, stack, sdk.telemetry)
        for code in [*made_up, -32602, -32029]:
            with pytest.raises(MCPError) as caught:
                client.request("x/fail", {"code": code})
            assert caught.value.code == code  # the answer itself is passed on as it is
    for side in ("server", "client"):
        types = _error_types(sdk, side)
        assert not types & {str(code) for code in made_up}, (side, types)
        assert {"_OTHER", "-32602", "-32029"} <= types, (side, types)
