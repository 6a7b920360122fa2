"""A server with MCP Apps through the extension: a view, a tool that links to it (and
tells whether its client shows apps), an app-only tool, and a model-only one. Run as a
module it serves over stdio (the stdio legs of the wire tests)."""

from __future__ import annotations

from mcpsync import HandlerContext, Server
from mcpsync.apps import Apps, client_shows_apps

DASHBOARD = "<!DOCTYPE html><html><body><p id='city'>dashboard</p></body></html>"
CSP = {"connectDomains": ["https://api.example.com"],
       "resourceDomains": ["https://cdn.example.com"]}


def build() -> Server:
    server = Server("weather")
    apps = server.use(Apps())
    apps.view("ui://weather/dashboard", DASHBOARD, name="dashboard", csp=CSP,
              permissions=["geolocation"], prefers_border=True)

    @server.tool(ui="ui://weather/dashboard")
    def forecast(ctx: HandlerContext, city: str) -> str:
        """The forecast for a city, with a dashboard."""
        shown = " (the dashboard shows it)" if client_shows_apps(ctx) else ""
        return f"{city}: sunny, 21 C{shown}"

    @server.tool(ui="ui://weather/dashboard", ui_visibility=["app"])
    def refresh(city: str) -> str:
        """Refresh the dashboard: for the view only."""
        return f"{city}: refreshed"

    @server.tool(ui_visibility=["model"])
    def advise(city: str) -> str:
        return f"take an umbrella to {city}"

    return server


server = build()

if __name__ == "__main__":
    server.run_stdio()
