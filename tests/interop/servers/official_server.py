"""An official-SDK (mcp 2.3.0) MCPServer that asks its client things. Run with that SDK's python.

Used to check that mcpsync's Client serves elicitation, sampling and roots requests of the
most common server it will meet.
"""

from __future__ import annotations

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

mcp = MCPServer("official-asker")


class Contact(BaseModel):
    name: str
    age: int = 30


@mcp.tool()
async def ask(ctx: Context) -> str:
    """Elicit a contact."""
    result = await ctx.elicit("Who are you?", Contact)
    if result.action != "accept":
        return f"user said {result.action}"
    return f"{result.data.name} ({result.data.age})"


@mcp.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Sample a summary from the client's model."""
    message = types.SamplingMessage(role="user",
                                    content=types.TextContent(type="text", text=text))
    reply = await ctx.session.create_message([message], max_tokens=20)
    return f"{reply.model}: {reply.content.text}"


@mcp.tool()
async def roots(ctx: Context) -> str:
    """List the client's roots."""
    listing = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in listing.roots)


@mcp.tool()
async def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    mcp.run("stdio")
