"""A tool returning a scalar (``-> str``, ``-> int``...) carries structured output as the
official Python SDK makes it (issue 41): an output schema ``{"result": <type>}`` and
``structuredContent: {"result": value}``, the text block holding the value itself. So a
peer's client that reads structured results gets the value: FastMCP's ``.data`` was
``None`` for an mcpsync ``-> str`` tool; the official client validates the structured
content against the schema."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpsync import Client, Server
from tests.interop.peers import _existing, peers_dir, require

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.interop

SERVER = textwrap.dedent("""\
    from mcpsync import Server

    server = Server("scalars")


    @server.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"


    @server.tool()
    def count(n: int) -> int:
        return n


    if __name__ == "__main__":
        server.run_stdio()
""")

FASTMCP_CLIENT = textwrap.dedent("""\
    import asyncio, json, sys

    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport


    async def main():
        transport = StdioTransport(command=sys.argv[1], args=sys.argv[2:])
        async with Client(transport) as client:
            result = await client.call_tool("greet", {"name": "Ada"})
            # An object with .result: what FastMCP's client makes of any server that wraps
            # as the official SDK does (its own servers add a private marker instead).
            print(json.dumps({"data": getattr(result.data, "result", None),
                              "text": result.content[0].text,
                              "structured": result.structured_content}))


    asyncio.run(main())
""")


def fastmcp_python() -> str:
    return _existing(peers_dir() / "bench-fastmcp" / "bin" / "python", "FastMCP venv")


def test_a_str_tool_has_a_wrapped_output_schema_and_structured_content():
    server = Server("scalars")

    @server.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    with Client.memory(server, timeout=30) as client:
        (tool,) = client.list_tools()
        result = client.call_tool("greet", {"name": "Ada"})
    assert tool.output_schema == {"type": "object", "properties": {
        "result": {"type": "string"}}, "required": ["result"]}
    assert result.structured_content == {"result": "Hello, Ada!"}
    assert result.text == "Hello, Ada!"  # the value itself, not its JSON


def test_structured_output_false_keeps_a_str_tool_text_only():
    server = Server("plain")

    @server.tool(structured_output=False)
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    with Client.memory(server, timeout=30) as client:
        (tool,) = client.list_tools()
        result = client.call_tool("greet", {"name": "Ada"})
    assert tool.output_schema is None and result.structured_content is None
    assert result.text == "Hello, Ada!"


def test_fastmcp_s_client_gets_the_value_of_a_str_tool(tmp_path):
    python = require(fastmcp_python)
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "client.py").write_text(FASTMCP_CLIENT)
    done = subprocess.run([python, "client.py", sys.executable, "server.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["data"] == "Hello, Ada!"  # was None: no structured content at all
    assert seen["structured"] == {"result": "Hello, Ada!"}
    assert seen["text"] == "Hello, Ada!"
