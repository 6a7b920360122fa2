"""A server whose handlers end by exceptions that are not an ``Exception``: the tests in
``test_handler_escape.py`` serve it on memory and HTTP, and run it as a stdio server."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from mcpsync import HandlerContext, Server

server = Server("escaping")


@server.tool()
def leave() -> str:
    """Calls sys.exit(), as a script turned into a tool may."""
    sys.exit(3)


@server.tool()
def interrupted() -> str:
    """Ends as Ctrl-C ends whatever the main thread runs."""
    raise KeyboardInterrupt


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
def held() -> str:
    """Says it runs (the file named by ESCAPING_MARKER), then waits for Ctrl-C."""
    Path(os.environ["ESCAPING_MARKER"]).write_text("running", encoding="utf-8")
    threading.Event().wait(60)
    return "never interrupted"


@server.method_handler("x/leave")
def raw_leave(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
    raise SystemExit(4)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one-thread-wsgi"]:  # a WSGI server on the main thread, alone
        from werkzeug.serving import make_server

        make_server("127.0.0.1", int(sys.argv[2]), server.wsgi_app(path="/mcp"),
                    threaded=False).serve_forever()  # returns on KeyboardInterrupt
    else:
        server.run_stdio()
