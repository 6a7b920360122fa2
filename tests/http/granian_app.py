"""The server the granian tests run under a real granian process
(``granian --interface wsgi tests.http.granian_app:app``): tools that hold their answer
until the test opens a gate, so the test can see what arrives before the result."""

from __future__ import annotations

import os
import time

from mcpsync import HandlerContext, Server
from tests.helpers import WAIT

#: How long a tool waits for its gate (or its cancellation) before it gives up.
GATE_WAIT = WAIT

server = Server("granian-test", version="1.0.0")


def _touch(path: str, text: str) -> None:
    if path:
        with open(path, "w") as f:
            f.write(text)


@server.tool()
def gated(ctx: HandlerContext, gate: str, steps: int = 2) -> str:
    """Report progress ``steps`` times, then answer only once the file ``gate`` exists: a
    response buffered by the server would hold the progress back until the test times out."""
    for i in range(1, steps + 1):
        ctx.progress(i, total=steps, message=f"step {i}")
    deadline = time.monotonic() + GATE_WAIT
    while not os.path.exists(gate) and time.monotonic() < deadline:
        ctx.sleep(0.02)  # raises when the call is cancelled
    return "opened"


@server.tool()
def slow(ctx: HandlerContext, started: str, marker: str, seconds: float = GATE_WAIT,
         finished: str = "") -> str:
    """Write ``started``, sleep cooperatively; when cancelled, write ``marker``, else
    ``finished`` at the end."""
    _touch(started, "started")
    try:
        ctx.sleep(seconds)
    finally:
        if ctx.cancelled.is_set():
            _touch(marker, repr(time.monotonic()))
    _touch(finished, "finished")
    return "finished"


@server.tool()
def add_tool(name: str) -> str:
    """Register a tool at run time: sessions hear ``notifications/tools/list_changed`` on
    their standalone GET stream."""
    def added() -> str:
        return name

    server.tool(name=name)(added)
    return "added"


# The tests shorten the keep-alive: under granian it is how a stream notices its client left.
app = server.wsgi_app(path="/mcp",
                      keepalive_interval=float(os.environ.get("GRANIAN_TEST_KEEPALIVE", "15")))
