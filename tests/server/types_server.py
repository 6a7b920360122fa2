"""A server with ``async def`` handlers, binary results and the extra parameter types; the
same definitions serve the memory, stdio and HTTP tests of tests/server/test_types_*.py."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpsync import HandlerContext, Server
from mcpsync.protocol.versions import MODERN_VERSIONS
from mcpsync.types.media import Audio, Image

server = Server("types", modern_versions=MODERN_VERSIONS, request_state_key="types-key")

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
WAV = b"RIFF\x24\0\0\0WAVEfmt " + b"\0" * 8


@server.tool()
async def add_later(ctx: HandlerContext, a: int, b: int) -> int:
    """Add two numbers after awaiting (a coroutine run on the handler thread)."""
    await asyncio.sleep(0)
    ctx.progress(1, 1)
    return a + b


@server.tool()
async def ask_name(ctx: HandlerContext) -> str:
    """Ask the client from async code (in 2026-07-28: an InputRequiredResult round)."""
    await asyncio.sleep(0)
    answer = ctx.elicit("Your name?", {"type": "object", "properties": {
        "name": {"type": "string"}}})
    return f"hello {answer.content['name']}" if answer.accepted else "no name"


@server.tool()
def anything() -> Any:
    """A value JSON cannot hold, from an ``-> Any`` tool."""
    return {"when": object()}


@server.tool()
def raw_png() -> bytes:
    return PNG


@server.tool()
def raw_blob() -> bytes:
    return b"\x00\x01binary"


@server.tool()
def pictures() -> list:  # type: ignore[type-arg]
    return [Image(PNG), Audio(WAV), "caption"]


@server.resource("types://async/{name}")
async def async_resource(name: str) -> str:
    await asyncio.sleep(0)
    return f"resource {name}"


@server.resource("types://bytes")
async def bytes_resource() -> bytes:
    return b"\x00\xff"


@server.prompt()
async def async_prompt(topic: str) -> str:
    await asyncio.sleep(0)
    return f"Talk about {topic}"


if __name__ == "__main__":
    server.run_stdio()
