"""An official-SDK (mcp 2.3.0) server whose tool needs a URL visited first: it raises the
SDK's ``UrlElicitationRequiredError`` (-32042, 2025-11-25). Run with that SDK's python."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import ElicitRequestURLParams

mcp = MCPServer("official-url-asker")


@mcp.tool()
async def files() -> str:
    """Needs the user to authorize at a URL first."""
    raise UrlElicitationRequiredError([ElicitRequestURLParams(
        message="Authorize access to your files", url="https://example.com/authorize",
        elicitation_id="auth-001")])


if __name__ == "__main__":
    mcp.run("stdio")
