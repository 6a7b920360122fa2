"""``Mcp-Param-*`` headers (2026-07-28) are checked for every tool a server lists with an
``x-mcp-header`` annotation: its own, a mounted server's and a proxied one's (issue 40),
and the check uses the map of the tool called now, never one of a tool removed earlier
(issue 34: a map cached by ``id()`` went to a new tool once the old one was gone).

Over a real socket, raw requests: a correct header is served, a forged or missing one is
400 with -32020 (HeaderMismatch), as for the server's own tools.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
import requests

from mcpsync import ProtocolOptions, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

from .raw import post_modern

HEADER_MISMATCH = -32020


def schema(header: str) -> dict[str, Any]:
    return {"type": "object", "required": ["region"], "properties": {
        "region": {"type": "string", "x-mcp-header": header}}}


def regional_server(name: str = "inner") -> Server:
    srv = Server(name, protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))

    @srv.tool(input_schema=schema("Region"))
    def regional(**arguments: Any) -> str:
        """Echo the region."""
        return f"region={arguments['region']}"

    return srv


def refused(response: requests.Response) -> bool:
    if response.status_code != 400:
        return False
    return bool(response.json()["error"]["code"] == HEADER_MISMATCH)


def served(response: requests.Response, text: str) -> bool:
    if response.status_code != 200:
        return False
    result = response.json().get("result") or {}
    return bool(result.get("content") == [{"type": "text", "text": text}])


def check(url: str, tool: str) -> None:
    """The listed annotation, then a correct, a forged and a missing header."""
    tools = post_modern(url, "tools/list").json()["result"]["tools"]
    listed = {t["name"]: t for t in tools}
    assert listed[tool]["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    call = {"name": tool, "arguments": {"region": "eu-1"}}
    good = post_modern(url, "tools/call", call, headers={"Mcp-Param-Region": "eu-1"})
    assert served(good, "region=eu-1"), good.text
    forged = post_modern(url, "tools/call", call, headers={"Mcp-Param-Region": "us-9"})
    assert refused(forged), forged.text
    missing = post_modern(url, "tools/call", call)
    assert refused(missing), missing.text


def test_a_mounted_tools_param_headers_are_checked(serve: Any) -> None:
    parent = Server("parent", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    parent.mount(regional_server(), prefix="geo")
    check(serve(parent).url, "geo_regional")


def test_a_tool_mounted_two_deep_is_checked(serve: Any) -> None:
    top = Server("top", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    middle = Server("middle", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    middle.mount(regional_server(), prefix="geo")
    top.mount(middle, prefix="mid")
    check(serve(top).url, "mid_geo_regional")


@pytest.mark.parametrize("mounted", [False, True], ids=["proxy", "mounted-proxy"])
def test_a_proxied_tools_param_headers_are_checked(serve: Any, mounted: bool) -> None:
    remote = regional_server("remote")
    proxy = Server.proxy(remote, name="proxy", timeout=10,
                         server_options={"protocol": ProtocolOptions(
                             modern_versions=MODERN_VERSIONS)})
    if not mounted:
        check(serve(proxy).url, "regional")
        return
    parent = Server("parent", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    parent.mount(proxy, prefix="far")
    check(serve(parent).url, "far_regional")


def test_a_proxied_tool_is_checked_before_anyone_listed_it(serve: Any) -> None:
    """A caller that never listed through this process (another worker did): the proxy
    learns the remote's annotations itself."""
    remote = regional_server("remote")
    proxy = Server.proxy(remote, name="proxy", timeout=10)
    url = serve(proxy).url
    call = {"name": "regional", "arguments": {"region": "eu-1"}}
    forged = post_modern(url, "tools/call", call, headers={"Mcp-Param-Region": "us-9"})
    assert refused(forged), forged.text
    good = post_modern(url, "tools/call", call, headers={"Mcp-Param-Region": "eu-1"})
    assert served(good, "region=eu-1"), good.text


def test_a_new_tool_never_gets_a_removed_tools_header_map(serve: Any) -> None:
    """Tools removed and added again and again, alternating two header names: each call
    is checked against the map of the tool that exists now."""
    srv = Server("churn", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    url = serve(srv).url
    wrong: list[str] = []
    for turn in range(60):
        header = "Region" if turn % 2 == 0 else "Zone"
        other = "Zone" if header == "Region" else "Region"

        def regional(**arguments: Any) -> str:
            return "ok"

        srv.add_tool(regional, name="regional", input_schema=schema(header))
        call = {"name": "regional", "arguments": {"region": "eu-1"}}
        good = post_modern(url, "tools/call", call, headers={f"Mcp-Param-{header}": "eu-1"})
        forged = post_modern(url, "tools/call", call,
                             headers={f"Mcp-Param-{header}": "us-9",
                                      f"Mcp-Param-{other}": "eu-1"})
        if not served(good, "ok"):
            wrong.append(f"turn {turn}: a correct call refused: {good.text}")
        if not refused(forged):
            wrong.append(f"turn {turn}: a forged header accepted")
        srv.remove_tool("regional")
        gc.collect()
    assert not wrong, wrong[:5]


def test_the_clients_header_maps_are_bounded() -> None:
    """The client side of the same class: the maps a client learns from ``tools/list``
    pages (to send ``Mcp-Param-*``) are bounded, newest kept."""
    from mcpsync.transports.http.tools import MAX_TOOL_MAPS, ToolHeaders

    maps = ToolHeaders()
    for page in range(3):
        maps.filter({"tools": [{"name": f"t{page}_{n}", "inputSchema": schema("Region")}
                               for n in range(MAX_TOOL_MAPS // 2 + 1)]})
    assert len(maps._maps) <= MAX_TOOL_MAPS
    assert maps.get(f"t2_{MAX_TOOL_MAPS // 2}") == {"Region": ("region",)}
    assert maps.get("t0_0") is None
