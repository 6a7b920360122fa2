"""Standalone ``fastmcp`` server for benchmarks/run.py.

stdio: ``python bench_fastmcp.py``; HTTP: ``uvicorn bench_fastmcp:app`` (stateless +
JSON-response streamable HTTP).
"""

from __future__ import annotations

import time

from fastmcp import FastMCP

mcp = FastMCP("bench")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def block(ms: int) -> str:
    """Block for ``ms`` milliseconds (plain time.sleep)."""
    time.sleep(ms / 1000.0)
    return "ok"


if __name__ == "__main__":
    mcp.run("stdio", show_banner=False)
else:
    app = mcp.http_app(path="/mcp", json_response=True, stateless_http=True)
