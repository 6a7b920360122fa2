"""An MCP endpoint for several gunicorn worker processes, both protocol eras.

    MCPSYNC_REQUEST_STATE_KEY=change-me MCPSYNC_SESSION_DIR=/tmp/mcp-sessions \\
        gunicorn --worker-class gthread --workers 4 --threads 32 \\
        --bind 127.0.0.1:8000 'examples.gunicorn_app:app'

What every worker must share, and why:

* ``MCPSYNC_REQUEST_STATE_KEY``: 2026-07-28 clients are stateless, but a tool that asks
  them a question is retried with a signed ``requestState``, which any worker must verify.
* ``session_store``: 2025-era clients hold a session (``Mcp-Session-Id``). With a shared
  store, any worker can take up a session that another one initialized.
"""

from __future__ import annotations

import os
import tempfile

from mcpsync import HandlerContext, Server
from mcpsync.http import FileSessionStore

server = Server("multi-worker", version="1.0.0")


@server.tool()
def worker(ctx: HandlerContext) -> dict[str, object]:
    """Which worker process answered, and the protocol revision of this request."""
    return {"pid": os.getpid(), "protocol": ctx.session.protocol_version}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


_sessions = os.environ.get("MCPSYNC_SESSION_DIR") or os.path.join(
    tempfile.gettempdir(), "mcpsync-sessions")
app = server.wsgi_app(path="/mcp", session_store=FileSessionStore(_sessions))
