"""MCP Apps through a hub: a tool's view link (``_meta.ui.resourceUri`` and the flat
``_meta["ui/resourceUri"]``) is prefixed as the view's resource is, so the URI the hub
lists for a tool is one the hub can read (the same rule as a mount's)."""

from __future__ import annotations

import sys

from mcpsync import Client, HostHandlers
from mcpsync.apps import fetch_view, host_capabilities, tools_with_views
from mcpsync.codec import to_wire
from tests.apps import weather
from tests.serving import ROOT


def test_a_hub_prefixes_a_tools_view_link_as_it_prefixes_the_view() -> None:
    config = {"mcpServers": {"weather": {
        "command": sys.executable, "args": ["-m", "tests.apps.weather"], "cwd": str(ROOT)}}}
    with Client.from_config(config, timeout=30, host=HostHandlers(
            extra_capabilities=host_capabilities())) as hub:
        prefixed = "ui://weather/weather/dashboard"
        assert tools_with_views(hub) == {"weather_forecast": prefixed,
                                         "weather_refresh": prefixed}
        forecast = next(t for t in hub.list_tools() if t.name == "weather_forecast")
        assert to_wire(forecast)["_meta"] == {
            "ui": {"resourceUri": prefixed, "visibility": ["model", "app"]},
            "ui/resourceUri": prefixed}
        assert prefixed in [r.uri for r in hub.list_resources()]
        view = fetch_view(hub, prefixed)  # type: ignore[arg-type]
        assert (view.html, view.csp) == (weather.DASHBOARD, weather.CSP)
        # The server's own client still lists its own URI.
        assert tools_with_views(hub.clients["weather"])["forecast"] == "ui://weather/dashboard"  # type: ignore[arg-type]
