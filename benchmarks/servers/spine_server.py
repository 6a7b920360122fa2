"""Benchmark server for benchmarks/spine.py (stdio)."""

from __future__ import annotations

import os
import time

from mcpsync import HandlerContext, RequestCancelledError, Server, ServerLimits

server = Server("spine", version="1.0.0",
                limits=ServerLimits(max_handlers=256))


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def block(ms: int) -> str:
    """Block the handler thread for ``ms`` milliseconds (plain time.sleep)."""
    time.sleep(ms / 1000.0)
    return f"slept {ms} ms"


@server.tool()
def cancellable(ctx: HandlerContext, seconds: float, marker: str) -> str:
    """Sleep cancellably; on cancellation write time.monotonic() to ``marker``."""
    try:
        ctx.sleep(seconds)
    except RequestCancelledError:
        now = time.monotonic()
        tmp = marker + ".tmp"
        with open(tmp, "w") as f:
            f.write(repr(now))
        os.replace(tmp, marker)  # atomic: the reader never sees a partial file
        raise
    return f"slept {seconds} s"


if __name__ == "__main__":
    server.run_stdio()
