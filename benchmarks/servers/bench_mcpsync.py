"""mcpsync server for benchmarks/run.py: stdio (``python bench_mcpsync.py``) or WSGI (``app``).

``MCPSYNC_BENCH_MAX_HANDLERS`` sets ``ServerLimits(max_concurrent_handlers=...)`` (the
flat keyword on a checkout older than ``ServerLimits``, for ``run.py --baseline``); run.py
sets it to 256 only for the blocking-tool rows and leaves the default (64) elsewhere.
"""

from __future__ import annotations

import os
import time

import mcpsync
from mcpsync import Server

_max = os.environ.get("MCPSYNC_BENCH_MAX_HANDLERS")
_options: dict[str, object] = {}
if _max:
    if hasattr(mcpsync, "ServerLimits"):
        _options["limits"] = mcpsync.ServerLimits(max_concurrent_handlers=int(_max))
    else:  # an older checkout, run as "mcpsync before" (run.py --baseline DIR)
        _options["max_concurrent_handlers"] = int(_max)
server = Server("bench", version="1.0.0", **_options)  # type: ignore[arg-type]


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def block(ms: int) -> str:
    """Block the handler thread for ``ms`` milliseconds (plain time.sleep)."""
    time.sleep(ms / 1000.0)
    return "ok"


def __getattr__(name: str) -> object:
    # ``app`` (for gunicorn) is made on first use: a stdio server must not pay for the
    # WSGI layer's imports, or the cold-start benchmark measures what a stdio server
    # never loads.
    if name == "app":
        globals()["app"] = server.wsgi_app(path="/mcp")
        return globals()["app"]
    raise AttributeError(name)


if __name__ == "__main__":
    server.run_stdio()
