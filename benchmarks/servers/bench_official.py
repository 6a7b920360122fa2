"""Official MCP Python SDK (mcp==2.3.0, ``MCPServer``) server for benchmarks/run.py.

stdio: ``python bench_official.py``; HTTP: ``uvicorn bench_official:app`` (streamable HTTP,
stateless + JSON-response mode, the SDK's cheapest HTTP mode).
"""

from __future__ import annotations

import time

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bench")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def block(ms: int) -> str:
    """Block for ``ms`` milliseconds (plain time.sleep; the SDK runs sync tools in a thread)."""
    time.sleep(ms / 1000.0)
    return "ok"


if __name__ == "__main__":
    mcp.run("stdio")
else:
    app = mcp.streamable_http_app(json_response=True, stateless_http=True)
