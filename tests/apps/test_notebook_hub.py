"""``call_tool`` on a hub (``Client.from_config``, names prefixed): the view is hosted on
its own server's client, so its calls and reads use the names its server knows, and it
reaches no other server."""

from __future__ import annotations

from mcpsync import Client, HostHandlers
from mcpsync.apps.wire import host_capabilities
from tests.apps import weather
from tests.helpers import require_module
from tests.serving import RunningServer

require_module("anywidget")


def test_a_hubs_tool_is_shown_on_its_servers_client() -> None:
    from mcpsync.apps.notebook import AppView, call_tool

    app = weather.build().wsgi_app(path="/mcp")
    other = weather.build().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, \
            RunningServer(other, on_stop=other.close) as running_other:
        config = {"mcpServers": {"weather": {"type": "http", "url": running.base + "/mcp"},
                                 "backup": {"type": "http",
                                            "url": running_other.base + "/mcp"}}}
        with Client.from_config(config, timeout=20, host=HostHandlers(
                extra_capabilities=host_capabilities())) as hub:
            shown = call_tool(hub, "weather_forecast", {"city": "Oslo"})
            assert isinstance(shown, AppView)
            try:
                assert shown.bridge.client is hub.clients["weather"]
                assert shown.tool == "forecast"
                [answer] = shown.bridge.handle({"jsonrpc": "2.0", "id": 1,
                                                "method": "tools/call", "params": {
                                                    "name": "refresh",
                                                    "arguments": {"city": "Oslo"}}})
                assert answer["result"]["content"][0]["text"] == "Oslo: refreshed"
                [other_server] = shown.bridge.handle({
                    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "backup_refresh", "arguments": {"city": "Oslo"}}})
                assert "not available to this view" in other_server["error"]["message"]
            finally:
                shown.close()
            plain = call_tool(hub, "weather_advise", {"city": "Oslo"})
            assert not isinstance(plain, AppView)
            assert plain.text == "take an umbrella to Oslo"
