"""MCP Apps through ``Server.proxy``: a proxy whose server uses the apps extension (or
that is told to with ``host=``) declares the extension to its remote, so the remote lists
it every tool with its view link and visibility; the proxy then keeps app-only tools
from its own callers that cannot show apps, as a server does (not listed, an unknown tool
if called). Every transport of the proxy's callers, both eras; the remote is a real
subprocess over stdio."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import Client, ClientMiddleware, HostHandlers, Server
from mcpsync.apps import fetch_view, host_capabilities, model_visible, view_uri, visibility
from mcpsync.apps.host import Bridge
from mcpsync.errors import MCPError
from tests.apps import weather, weather_proxy
from tests.serving import client_over

VERSIONS = ["2025-11-25", "2026-07-28"]
KINDS = ["memory", "stdio", "http"]
URI = "ui://weather/dashboard"


def _apps() -> dict[str, Any]:
    return {"host": HostHandlers(extra_capabilities=host_capabilities())}


@pytest.fixture(params=[(k, v) for k in KINDS for v in VERSIONS],
                ids=[f"{k}-{v}" for k in KINDS for v in VERSIONS])
def leg(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, Server]]:
    kind, version = request.param
    proxy = weather_proxy.build()
    try:
        yield kind, version, proxy
    finally:
        proxy.stop()


def _check_host(client: Client) -> None:
    tools = {t.name: t for t in client.list_tools()}
    assert list(tools) == ["forecast", "refresh", "advise"]
    assert view_uri(tools["forecast"]) == URI and visibility(tools["refresh"]) == ("app",)
    assert [name for name, t in tools.items() if model_visible(t)] == ["forecast", "advise"]
    view = fetch_view(client, URI)
    assert (view.html, view.csp) == (weather.DASHBOARD, weather.CSP)
    bridge = Bridge(client, tools["forecast"], {"city": "Oslo"}, view)
    [answer] = bridge.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "refresh", "arguments": {"city": "Oslo"}}})
    assert answer["result"]["content"] == [{"type": "text", "text": "Oslo: refreshed"}]


def _check_plain(client: Client) -> None:
    # Called before any listing: the proxy lists its remote to learn the visibility.
    with pytest.raises(MCPError) as caught:
        client.call_tool("refresh", {"city": "Oslo"})
    assert caught.value.message == "Unknown tool: refresh"
    assert [t.name for t in client.list_tools()] == ["forecast", "advise"]
    assert client.call_tool("forecast", {"city": "Oslo"}).text.startswith("Oslo: sunny")


def test_a_caller_with_apps_gets_the_views_and_the_app_only_tools(
        leg: tuple[str, str, Server]) -> None:
    kind, version, proxy = leg
    with client_over(kind, proxy, "tests.apps.weather_proxy", version, **_apps()) as client:
        _check_host(client)


def test_a_caller_without_apps_does_not_get_the_app_only_tools(
        leg: tuple[str, str, Server]) -> None:
    kind, version, proxy = leg
    with client_over(kind, proxy, "tests.apps.weather_proxy", version) as client:
        _check_plain(client)


@pytest.mark.parametrize("version", VERSIONS)
def test_host_is_the_explicit_option(version: str) -> None:
    """A proxy whose server does not use the extension declares it when its client is
    given ``host=`` declaring it (that keyword used to clash with the proxy's own), and
    still keeps app-only tools from callers without apps."""
    proxy = Server.proxy(weather_proxy.REMOTE, cwd=str(weather_proxy.ROOT), timeout=30,
                         **_apps())
    try:
        with Client.memory(proxy, protocol_version=version, **_apps()) as client:
            _check_host(client)
        with Client.memory(proxy, protocol_version=version) as client:
            _check_plain(client)
    finally:
        proxy.stop()


def test_a_proxy_that_is_not_told_keeps_declaring_nothing() -> None:
    """Neither the extension on its server nor ``host=``: the remote keeps its app-only
    tools from the proxy (and so from every caller), as before."""
    proxy = Server.proxy(weather.build())
    try:
        with Client.memory(proxy, **_apps()) as client:
            assert [t.name for t in client.list_tools()] == ["forecast", "advise"]
    finally:
        proxy.stop()


def test_handlers_the_proxy_answers_itself_are_refused() -> None:
    """The proxy answers its remote's questions by asking its own callers: a ``host=``
    handler for them, or an ``on_log``, would be shadowed, so it is refused by name."""
    with pytest.raises(ValueError, match="elicitation"):
        Server.proxy(weather.build(), host=HostHandlers(elicitation=lambda params: {}))
    with pytest.raises(ValueError, match="on_log"):
        Server.proxy(weather.build(), on_log=print)


def test_middleware_runs_inside_the_proxys_own() -> None:
    """``middleware=`` is the proxy's client's too (it used to clash with the proxy's)."""
    sent: list[str] = []

    def record(message: Any, next_: Callable[[Any], None]) -> None:
        sent.append(str(getattr(message, "method", "")))
        next_(message)

    proxy = Server.proxy(weather.build(), middleware=ClientMiddleware(send=[record]))
    try:
        with Client.memory(proxy) as client:
            assert client.call_tool("advise", {"city": "Oslo"}).text == "take an umbrella to Oslo"
        assert "tools/call" in sent
    finally:
        proxy.stop()
