"""A server whose handlers ask the client things (for the tests of a client's error answer
to a reverse call). Run as a script, it serves stdio."""

from __future__ import annotations

from mcpsync import HandlerContext, PeerRequestError, Server

FORM = {"type": "object", "properties": {"name": {"type": "string"}}}

server = Server("peer-errors", request_state_key="peer-errors-key")


@server.tool()
def ask(ctx: HandlerContext) -> str:
    return ctx.elicit("name?", FORM).content["name"]


@server.tool()
def think(ctx: HandlerContext) -> str:
    return ctx.sample("hello", max_tokens=5).text


@server.tool()
def where(ctx: HandlerContext) -> str:
    return ",".join(r.uri for r in ctx.list_roots())


@server.tool()
def ask_or_guess(ctx: HandlerContext) -> str:
    """Catches the client's refusal and carries on."""
    try:
        return ctx.elicit("name?", FORM).content["name"]
    except PeerRequestError as exc:
        return f"guessed ({exc.method} -> {exc.peer_code})"


@server.tool()
def ask_detached(ctx: HandlerContext) -> str:
    """A raw request from a detached context (as background work would send it)."""
    try:
        ctx.detach().request("roots/list")
    except PeerRequestError as exc:
        return f"detached: {exc.method} -> {exc.peer_code}"
    return "answered"


@server.prompt()
def greet(ctx: HandlerContext) -> str:
    return "hello " + ctx.elicit("name?", FORM).content["name"]


@server.resource("ask://name")
def name_resource(ctx: HandlerContext) -> str:
    return ctx.elicit("name?", FORM).content["name"]


if __name__ == "__main__":
    server.run_stdio()
