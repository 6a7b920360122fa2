"""fastmcp's side of ``benchmarks/routes.py`` (run by the bench-fastmcp venv's Python):
``FastMCP.from_openapi`` over the app's document, calling the app over HTTP at BASE, and
fastmcp's own in-memory ``Client`` calling ``get_item`` N times after a warm-up. Prints
``{"us": <median µs per call over ROUNDS rounds>}``.

    python routes_fastmcp.py BASE N ROUNDS
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import httpx2  # fastmcp 4's HTTP client
from fastmcp import Client, FastMCP
from routes_app import DOCUMENT


async def main(base: str, n: int, rounds: int) -> None:
    async with httpx2.AsyncClient(base_url=base) as http:
        mcp = FastMCP.from_openapi(openapi_spec=DOCUMENT, client=http, name="items")
        async with Client(mcp) as client:
            for i in range(50):  # warm-up: connections, caches
                await client.call_tool("get_item", {"item_id": i})
            per_call = []
            for _ in range(rounds):
                began = time.perf_counter()
                for i in range(n):
                    result = await client.call_tool("get_item", {"item_id": i})
                per_call.append((time.perf_counter() - began) / n * 1e6)
            assert result.structured_content == {"id": n - 1, "name": f"item {n - 1}",
                                                 "verbose": False}, result
    print(json.dumps({"us": statistics.median(per_call)}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
