"""A server with a lifespan and startup/shutdown hooks that record what they did, for the
lifespan tests in subprocesses (stdio, gunicorn).

``MCPSYNC_TEST_LIFESPAN_LOG``: a file each event is appended to as ``<event> <pid>``
(``startup``, ``hook-up``, ``hook-down``, ``shutdown``). ``MCPSYNC_TEST_LIFESPAN_FAIL``:
startup raises. Run directly it serves stdio; ``app`` is its WSGI app at /mcp.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpsync import HandlerContext, Server

LOG = os.environ.get("MCPSYNC_TEST_LIFESPAN_LOG")


def record(event: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(f"{event} {os.getpid()}\n")


def lifespan(server: Server) -> Iterator[dict[str, Any]]:
    record("startup")
    if os.environ.get("MCPSYNC_TEST_LIFESPAN_FAIL"):
        raise ConnectionError("the database is not reachable")
    state = {"pid": os.getpid(), "db": "connected"}
    try:
        yield state
    finally:
        record("shutdown")


server = Server("lifespan", lifespan=lifespan)


@server.on_startup
def hook_up() -> None:
    record("hook-up")


@server.on_shutdown
def hook_down() -> None:
    record("hook-down")


@server.tool()
def state(ctx: HandlerContext) -> dict[str, Any]:
    """The lifespan's state as this process has it, and how many startups it ran."""
    startups = 0
    if LOG and os.path.exists(LOG):
        with open(LOG, encoding="utf-8") as f:
            startups = f.read().split("\n").count(f"startup {os.getpid()}")
    return {**ctx.state, "startups": startups}


app = server.wsgi_app(path="/mcp")

if __name__ == "__main__":
    server.run_stdio()
