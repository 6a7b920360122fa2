"""A mcpsync server whose blocking tools ask the client things, plus resources and prompts."""

from __future__ import annotations

from dataclasses import dataclass

from mcpsync import HandlerContext, ProtocolOptions, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("mcpsync-asker", version="1.0.0",
                protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                request_state_key="interop-key")


@dataclass
class Contact:
    name: str
    age: int = 30


@server.tool()
def ask_contact(ctx: HandlerContext) -> str:
    """Elicit a contact (form mode)."""
    answer = ctx.elicit("Who are you?", Contact)
    if not answer.accepted:
        return f"user said {answer.action}"
    return f"{answer.data.name} ({answer.data.age})"


@server.tool()
def summarize(ctx: HandlerContext, text: str) -> str:
    """Sample a summary from the client's model."""
    reply = ctx.sample(text, max_tokens=30)
    return f"{reply.model}: {reply.text}"


@server.tool()
def roots(ctx: HandlerContext) -> str:
    """The client's roots, comma-separated."""
    return ",".join(root.uri for root in ctx.list_roots())


@server.tool()
def count(ctx: HandlerContext, steps: int = 3) -> str:
    """Report progress."""
    for i in range(1, steps + 1):
        ctx.progress(i, total=steps)
    return "counted"


@server.resource("test://template/{id}/data", mime_type="application/json")
def data(id: str) -> dict:
    """Template data."""
    return {"id": id}


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}."


if __name__ == "__main__":
    server.run_stdio()
