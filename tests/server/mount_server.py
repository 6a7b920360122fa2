"""A parent server that mounts a "weather" server under the prefix ``weather``, for the
mount tests (in this process, and as ``python -m tests.server.mount_server`` over stdio).

The weather server has a tool, a fixed resource and a template, a prompt, completers, a
lifespan (its state is what its ``where`` tool reports) and middleware on both sides
(receive: records what it saw and refuses ``tools/call`` of ``secret``; send: marks tool
results with ``_meta["weather/sent"]``). The parent has a tool of its own (``hello``) and
``grow``, which registers a tool on the *weather* server while serving (mounting is live).

``MCPSYNC_TEST_MOUNT_LOG``: a file the weather lifespan appends ``startup``/``shutdown``
to. Pages are small (parent 3, weather 1) so that lists cross page boundaries.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpsync import HandlerContext, MCPError, ResourceLink, Server, ServerLimits
from mcpsync.protocol.jsonrpc import Message, Request, Response


def record(event: str) -> None:
    log = os.environ.get("MCPSYNC_TEST_MOUNT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{event}\n")


def weather_lifespan(server: Server) -> Iterator[dict[str, Any]]:
    record("startup")
    try:
        yield {"station": "Blindern"}
    finally:
        record("shutdown")


def build_weather() -> Server:
    weather = Server("weather", limits=ServerLimits(page_size=1), lifespan=weather_lifespan)
    seen: list[str] = []
    lock = threading.Lock()

    def recv(message: Message, next_: Callable[[Message], None]) -> None:
        if isinstance(message, Request) and message.method == "tools/call":
            name = (message.params or {}).get("name")
            with lock:
                seen.append(str(name))
            if name == "secret":
                raise MCPError("refused by weather's middleware", code=-32001)
        next_(message)

    def send(message: Message, next_: Callable[[Message], None]) -> None:
        if isinstance(message, Response) and "content" in message.result:
            meta = dict(message.result.get("_meta") or {})
            meta["weather/sent"] = True
            message = Response(message.id, {**message.result, "_meta": meta})
        next_(message)

    weather.recv_middleware.append(recv)
    weather.send_middleware.append(send)

    @weather.tool()
    def forecast(city: str) -> str:
        """Tomorrow's weather in a city."""
        return f"{city}: sunny"

    @weather.tool()
    def where(ctx: HandlerContext) -> str:
        """The station of the weather server's lifespan (its ``ctx.state``)."""
        return str(ctx.state["station"])

    @weather.tool()
    def secret() -> str:
        return "never: the middleware refuses it"

    @weather.tool()
    def calls_seen() -> list[str]:
        """The tool names the weather server's receive middleware saw."""
        with lock:
            return list(seen)

    @weather.tool()
    def link() -> ResourceLink:
        """A resource link to one of the weather server's resources."""
        return ResourceLink(uri="weather://cities/Oslo", name="Oslo")

    @weather.resource("weather://about")
    def about() -> str:
        return "the weather server"

    @weather.resource("weather://cities/{city}")
    def city(city: str) -> str:
        return f"{city} weather"

    @weather.prompt()
    def ask(city: str) -> str:
        """Ask about the weather."""
        return f"What is the weather in {city}?"

    @weather.completer("ask", "city")
    def cities(value: str, context: dict[str, str]) -> list[str]:
        return [c for c in ("Oslo", "Osaka", "Paris") if c.startswith(value)]

    @weather.completer("weather://cities/{city}", "city")
    def template_cities(value: str, context: dict[str, str]) -> list[str]:
        return [c for c in ("Bergen", "Berlin") if c.startswith(value)]

    return weather


def build() -> Server:
    """A fresh parent with a fresh weather server mounted under ``weather``."""
    parent = Server("main", limits=ServerLimits(page_size=3))
    weather = build_weather()

    @parent.tool()
    def hello() -> str:
        return "hello from main"

    @parent.tool()
    def grow(name: str) -> str:
        """Register a tool on the mounted weather server (announced as a list change)."""
        weather.add_tool(lambda: f"grown {name}", name=name)
        return "ok"

    @parent.resource("main://readme")
    def readme() -> str:
        return "the parent"

    parent.mount(weather, prefix="weather")
    return parent


server = build()

if __name__ == "__main__":
    server.run_stdio()
