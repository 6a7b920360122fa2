"""A server on the official Python SDK's MCP Apps extension (run with the official SDK's
venv, over stdio): the interop peer of mcpsync's host. Not imported by the tests."""

from mcp.server.apps import Apps, ResourceCsp, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

apps = Apps()


@apps.tool(resource_uri="ui://clock/app.html", description="The time, with a view")
def get_time(ctx: Context) -> str:
    return "12:00" + (" (apps)" if client_supports_apps(ctx) else "")


@apps.tool(resource_uri="ui://clock/app.html", visibility=["app"], description="For the view")
def tick() -> str:
    return "tock"


apps.add_html_resource("ui://clock/app.html", "<!DOCTYPE html><p>clock</p>",
                       csp=ResourceCsp(connect_domains=["https://time.example"]),
                       prefers_border=False)

mcp = MCPServer("clock", extensions=[apps])

if __name__ == "__main__":
    mcp.run()
