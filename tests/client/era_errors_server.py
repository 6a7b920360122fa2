"""A server that fails in every way the two eras may answer differently, for
``test_errors_by_era.py``; over stdio: ``python -m tests.client.era_errors_server``."""

from __future__ import annotations

from mcpsync import HandlerContext, ProtocolOptions, ResourceNotFoundError, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("era-errors", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def ask(ctx: HandlerContext) -> str:
    """Needs the elicitation capability the test client does not declare."""
    answer = ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
    return str(answer.content)


@server.tool()
def pause(ctx: HandlerContext, seconds: float = 30.0) -> str:
    """Sleep cooperatively (cancelled when the caller's deadline passes)."""
    ctx.sleep(seconds)
    return "slept"


@server.prompt()
def greet(name: str) -> str:
    """Needs ``name``."""
    return f"hello {name}"


@server.resource("notes://one")
def one() -> str:
    return "one"


@server.resource("notes://item/{name}")
def item(name: str) -> str:
    """A template whose read function says some names do not exist."""
    if name == "missing":
        raise ResourceNotFoundError(f"no note named {name}")
    return f"note {name}"


if __name__ == "__main__":
    server.run_stdio()
