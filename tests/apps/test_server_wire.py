"""The apps extension on the wire, on every transport and in both eras: negotiated, the
view's MIME type and ``_meta.ui``, the tool's link, the app-only tool (absent from a
client without apps, listed with its visibility and callable by a view for one with
them), the text fallback, and a mount and a proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, HostHandlers, Server
from mcpsync.apps import EXTENSION, MIME_TYPE, model_visible, view_uri, visibility
from mcpsync.apps.host import Bridge, fetch_view
from mcpsync.apps.wire import host_capabilities
from mcpsync.codec import to_wire
from mcpsync.errors import MCPError
from tests.apps import weather
from tests.serving import client_over

VERSIONS = ["2025-11-25", "2026-07-28"]
KINDS = ["memory", "stdio", "http"]
URI = "ui://weather/dashboard"


def _apps() -> dict[str, Any]:
    return {"host": HostHandlers(extra_capabilities=host_capabilities())}


@pytest.fixture(params=[(k, v) for k in KINDS for v in VERSIONS],
                ids=[f"{k}-{v}" for k in KINDS for v in VERSIONS])
def leg(request: pytest.FixtureRequest) -> tuple[str, str]:
    kind, version = request.param
    return kind, version


@pytest.fixture()
def host(leg: tuple[str, str]) -> Iterator[Client]:
    """A client that shows apps (it declared the extension)."""
    with client_over(leg[0], weather.build(), "tests.apps.weather", leg[1],
                     **_apps()) as client:
        yield client


@pytest.fixture()
def plain(leg: tuple[str, str]) -> Iterator[Client]:
    """A client without apps."""
    with client_over(leg[0], weather.build(), "tests.apps.weather", leg[1]) as client:
        yield client


def test_the_extension_is_negotiated(host: Client) -> None:
    assert host.server_capabilities["extensions"][EXTENSION] == {"mimeTypes": [MIME_TYPE]}
    # The server saw the client's declaration (the tool adapts its text).
    result = host.call_tool("forecast", {"city": "Oslo"})
    assert result.content[0].text == "Oslo: sunny, 21 C (the dashboard shows it)"


def test_the_view_is_a_resource_with_the_apps_mime_type_and_meta(host: Client) -> None:
    listed = next(r for r in host.list_resources() if r.uri == URI)
    assert listed.mime_type == MIME_TYPE
    ui = {"csp": weather.CSP, "permissions": {"geolocation": {}}, "prefersBorder": True}
    assert to_wire(listed)["_meta"] == {"ui": ui}
    content = to_wire(host.read_resource(URI))["contents"][0]
    assert content == {"uri": URI, "mimeType": MIME_TYPE, "text": weather.DASHBOARD,
                       "_meta": {"ui": ui}}
    view = fetch_view(host, URI)
    assert (view.html, view.csp, view.prefers_border) == (weather.DASHBOARD, weather.CSP, True)


def test_a_tool_links_to_its_view(host: Client) -> None:
    tools = {t.name: t for t in host.list_tools()}
    meta = to_wire(tools["forecast"])["_meta"]
    assert meta == {"ui": {"resourceUri": URI, "visibility": ["model", "app"]},
                    "ui/resourceUri": URI}
    assert view_uri(tools["forecast"]) == URI
    assert view_uri(tools["advise"]) is None and visibility(tools["advise"]) == ("model",)


def test_an_app_only_tool_is_listed_for_a_host_which_keeps_it_from_its_model(
        host: Client) -> None:
    tools = {t.name: t for t in host.list_tools()}
    assert visibility(tools["refresh"]) == ("app",)
    assert [t.name for t in tools.values() if model_visible(t)] == ["forecast", "advise"]
    # The view calls it through the host's bridge; the model-only tool is refused it.
    bridge = Bridge(host, tools["forecast"], {"city": "Oslo"}, fetch_view(host, URI))
    [answer] = bridge.handle({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "refresh", "arguments": {"city": "Oslo"}}})
    assert answer["result"]["content"] == [{"type": "text", "text": "Oslo: refreshed"}]
    [refused] = bridge.handle({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                               "params": {"name": "advise", "arguments": {"city": "Oslo"}}})
    assert refused["error"]["message"] == "tool 'advise' is not available to this view"


def test_an_app_only_tool_is_absent_for_a_client_without_apps(plain: Client) -> None:
    assert [t.name for t in plain.list_tools()] == ["forecast", "advise"]
    with pytest.raises(MCPError) as caught:
        plain.call_tool("refresh", {"city": "Oslo"})
    assert caught.value.message == "Unknown tool: refresh"


def test_a_client_without_apps_gets_the_text(plain: Client) -> None:
    result = plain.call_tool("forecast", {"city": "Oslo"})
    assert [to_wire(b) for b in result.content] == [{"type": "text",
                                                     "text": "Oslo: sunny, 21 C"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_mount_prefixes_the_view_and_the_link(version: str) -> None:
    parent = Server("site")
    parent.mount(weather.build(), prefix="wx")
    with Client.memory(parent, protocol_version=version, **_apps()) as client:
        tools = {t.name: t for t in client.list_tools()}
        prefixed = "ui://wx/weather/dashboard"
        assert view_uri(tools["wx_forecast"]) == prefixed
        assert to_wire(tools["wx_forecast"])["_meta"]["ui/resourceUri"] == prefixed
        assert prefixed in [r.uri for r in client.list_resources()]
        view = fetch_view(client, prefixed)
        assert view.html == weather.DASHBOARD and view.csp == weather.CSP
        bridge = Bridge(client, tools["wx_forecast"], {"city": "Oslo"}, view)
        [answer] = bridge.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "wx_refresh", "arguments": {"city": "Oslo"}}})
        assert answer["result"]["content"][0]["text"] == "Oslo: refreshed"
    with Client.memory(parent, protocol_version=version) as plain:
        assert [t.name for t in plain.list_tools()] == ["wx_forecast", "wx_advise"]
        with pytest.raises(MCPError, match="Unknown tool"):
            plain.call_tool("wx_refresh", {"city": "Oslo"})


@pytest.mark.parametrize("version", VERSIONS)
def test_a_proxy_passes_views_on(version: str) -> None:
    """The view and the tool's link pass through. (The proxy's own client declares no
    extension, so the remote keeps its app-only tools from the proxy: docs/apps.md.)"""
    proxy = Server.proxy(weather.build())
    try:
        with Client.memory(proxy, protocol_version=version, **_apps()) as client:
            tools = {t.name: t for t in client.list_tools()}
            assert view_uri(tools["forecast"]) == URI
            assert visibility(tools["forecast"]) == ("model", "app")
            view = fetch_view(client, URI)
            assert (view.html, view.csp) == (weather.DASHBOARD, weather.CSP)
            assert client.call_tool("forecast", {"city": "Oslo"}).content[0].text.startswith(
                "Oslo: sunny")
    finally:
        proxy.stop()
