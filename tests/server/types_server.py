"""A server with ``async def`` handlers, binary results and the extra parameter types; the
same definitions serve the memory, stdio and HTTP tests of tests/server/test_types_*.py."""

from __future__ import annotations

import asyncio
import datetime
import decimal
import enum
import pathlib
import uuid
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypedDict

from mcpsync import Audio, HandlerContext, Image, ProtocolOptions, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("types", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                request_state_key="types-key")

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


class Size(enum.Enum):
    S = "small"
    L = "large"


class Span(NamedTuple):
    start: int
    end: int = -1


@dataclass
class Event:
    when: datetime.datetime
    id: uuid.UUID
    size: Size = Size.S


class Options(TypedDict):
    mode: Literal["fast", "slow"]


@server.tool()
def every_type(when: datetime.datetime, day: datetime.date, at: datetime.time, id: uuid.UUID,
               path: pathlib.Path, price: decimal.Decimal, data: bytes, span: Span, count: int,
               names: dict[int, str], event: Event, options: Options) -> dict[str, Any]:
    """Echo every argument back with its Python type (encoded the way arguments arrive)."""
    values = {"when": when, "day": day, "at": at, "id": id, "path": path, "price": price,
              "data": data, "span": span, "count": count, "names": names, "event": event,
              "options": options}
    return {"values": values, "types": {k: type(v).__name__ for k, v in values.items()},
            "key_types": sorted({type(k).__name__ for k in names}),
            "event_types": [type(event.when).__name__, type(event.id).__name__,
                            type(event.size).__name__]}


@server.tool()
def next_event(after: datetime.datetime) -> Event:
    return Event(after + datetime.timedelta(days=1), uuid.UUID(int=1), Size.L)


@server.resource("types://day/{day}")
def day_resource(day: datetime.date) -> str:
    return day.strftime("%A")


@server.resource("types://dated")
def dated_resource() -> dict[str, Any]:
    return {"at": datetime.date(2026, 7, 28), "id": uuid.UUID(int=1)}


@server.resource("types://opaque")
def opaque_resource() -> dict[str, Any]:
    return {"what": object()}


@server.completer("types://day/{day}", "day")
async def complete_day(value: str, context: dict[str, str]) -> list[str]:
    await asyncio.sleep(0)
    return [d for d in ("2026-07-28", "2026-07-29") if d.startswith(value)]


@server.tool(structured_output=True)
def raw_structured() -> bytes:
    return b"\x00\x01"


if __name__ == "__main__":
    server.run_stdio()
