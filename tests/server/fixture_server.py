"""A server exercising every tool feature of the spine, used by memory and stdio tests."""

from __future__ import annotations

import enum
import os
import sys
import time
from dataclasses import dataclass
from typing import Literal

from mcpsync import (
    EmbeddedResource,
    HandlerContext,
    ImageContent,
    InvalidParamsError,
    ProtocolOptions,
    Server,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    ToolError,
)
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("fixture", version="9.9.9", title="Fixture server", instructions="For tests.",
                protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                request_state_key="fixture-key")


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@dataclass
class Reading:
    city: str
    value: float
    unit: str


@server.tool(annotations=ToolAnnotations(read_only_hint=True), title="Echo")
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def reading(city: str, unit: Unit = Unit.C, precision: Literal[0, 1, 2] = 1) -> Reading:
    """A structured reading."""
    return Reading(city=city, value=round(21.456, precision), unit=unit.value)


@server.tool()
def mixed() -> list:
    """Several content types at once."""
    return [
        TextContent("hello"),
        ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
        EmbeddedResource(
            TextResourceContents(uri="test://doc", text="inside", mime_type="text/plain")
        ),
    ]


@server.tool()
def fail(message: str = "boom") -> str:
    """Fail on purpose: an isError result that says ``message`` (any other exception is
    answered with a generic message; tests/server/test_tool_outcome.py)."""
    raise ToolError(message)


@server.tool()
def protocol_fail() -> str:
    """Raise an MCPError (becomes a JSON-RPC error)."""
    raise InvalidParamsError("not today", data={"why": "test"})


@server.tool()
def slow(ctx: HandlerContext, seconds: float = 30.0, marker: str = "", started: str = "") -> str:
    """Sleep cooperatively; on cancellation write the monotonic time to ``marker``."""
    if started:
        with open(started, "w") as f:
            f.write("started")
    try:
        ctx.sleep(seconds)
    finally:
        if ctx.cancelled.is_set() and marker:
            with open(marker, "w") as f:
                f.write(repr(time.monotonic()))
    return "finished"


@server.tool()
def block(seconds: float) -> str:
    """A blocking call that ignores cancellation (like a slow ORM query)."""
    time.sleep(seconds)
    return "done"


@server.tool()
def progress(ctx: HandlerContext, steps: int = 5) -> str:
    """Report progress ``steps`` times."""
    for i in range(1, steps + 1):
        ctx.progress(i, total=steps, message=f"step {i}")
    return "ok"


@server.tool()
def chatty(ctx: HandlerContext) -> str:
    """Print to stdout and stderr, and log at several levels."""
    print("this goes to stderr, not the protocol stream")
    os.write(1, b"raw fd 1 write\n")
    print("explicit stderr", file=sys.stderr)
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, {"level": level}, logger="fixture")
    return "said things"


if __name__ == "__main__":
    server.run_stdio()
