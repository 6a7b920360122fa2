"""An official-SDK (mcp 2.3.0) MCPServer that asks its client things. Run with that SDK's python.

Used to check that mcpsync's Client serves elicitation, sampling and roots requests of the
most common server it will meet.
"""

from __future__ import annotations

from typing import Annotated

from mcp import types
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
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



@mcp.tool()
async def count(n: int, ctx: Context) -> str:
    """Report progress n times."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"counted {n}"


@mcp.tool()
async def nap(seconds: float) -> str:
    """Sleep (cancellable: an asyncio sleep)."""
    import anyio

    await anyio.sleep(seconds)
    return "rested"


@mcp.resource("greeting://hello")
def greeting() -> str:
    return "Hello from the official SDK"


@mcp.resource("greeting://people/{name}")
def greet_person(name: str) -> str:
    return f"Hello, {name}"


@mcp.prompt()
def review(topic: str) -> str:
    """Ask for a review of a topic."""
    return f"Please review {topic}."


# The same questions through the SDK's resolvers, which work in both eras (MRTR in 2026-07-28).
def _ask_contact() -> Elicit[Contact]:
    return Elicit("Who are you?", Contact)


def _sample_summary(text: str) -> Sample:
    message = types.SamplingMessage(role="user",
                                    content=types.TextContent(type="text", text=text))
    return Sample([message], max_tokens=20)


def _list_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def ask_resolved(contact: Annotated[Contact, Resolve(_ask_contact)]) -> str:
    return f"{contact.name} ({contact.age})"


@mcp.tool()
async def summarize_resolved(
    text: str, reply: Annotated[types.CreateMessageResult, Resolve(_sample_summary)]
) -> str:
    return f"{reply.model}: {reply.content.text}"


@mcp.tool()
async def roots_resolved(listing: Annotated[types.ListRootsResult, Resolve(_list_roots)]) -> str:
    return ",".join(str(root.uri) for root in listing.roots)


if __name__ == "__main__":
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import otel_file  # OTEL_SPANS_FILE: trace into that file (the telemetry interop tests)

    otel_file.configure()

    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        # Streamable HTTP on 127.0.0.1:PORT/mcp, sessions and SSE (its default mode).
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("stdio")
