"""mcpsync server for benchmarks/run.py: stdio (``python bench_mcpsync.py``) or WSGI (``app``).

``MCPSYNC_BENCH_MAX_HANDLERS`` sets ``ServerLimits(max_handlers=...)``; run.py sets it to
256 only for the blocking-tool rows and leaves the default (64) elsewhere. For
``run.py --baseline`` on an older checkout it is spelt as that checkout spells it: the
field ``max_concurrent_handlers`` of ``ServerLimits``, or before ``ServerLimits`` the flat
keyword of the same name. That compatibility lives here, not in mcpsync.
"""

from __future__ import annotations

import dataclasses
import os
import time

import mcpsync
from mcpsync import Server

_max = os.environ.get("MCPSYNC_BENCH_MAX_HANDLERS")
_options: dict[str, object] = {}
if _max:
    if not hasattr(mcpsync, "ServerLimits"):  # an older checkout (run.py --baseline DIR)
        _options["max_concurrent_handlers"] = int(_max)
    elif any(f.name == "max_handlers" for f in dataclasses.fields(mcpsync.ServerLimits)):
        _options["limits"] = mcpsync.ServerLimits(max_handlers=int(_max))
    else:  # ServerLimits before the field took the client's name
        _options["limits"] = mcpsync.ServerLimits(max_concurrent_handlers=int(_max))
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
