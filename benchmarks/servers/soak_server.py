"""The server benchmarks/soak.py drives: one of every long-lived thing a client can leave
behind (a cancellable slow call, a question, progress and logs, subscriptions and listens),
plus ``soak_stats``, which reports the server's own tables so the soak can tell a leak
from noise.

    python benchmarks/servers/soak_server.py stdio
    python benchmarks/servers/soak_server.py http PORT          # werkzeug, threaded
    gunicorn -k gthread --threads 64 -w 1 'soak_server:app'     # (from benchmarks/servers)

Handshake-era sessions expire after ``SOAK_SESSION_IDLE`` seconds (default 15), so a soak
with abandoned sessions can see them go within its idle period.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from typing import Any

from mcpsync import HandlerContext, Server, ServerLimits

SESSION_IDLE = float(os.environ.get("SOAK_SESSION_IDLE", "15"))

server = Server("soak", version="1.0.0", request_state_key="soak-key",
                limits=ServerLimits(max_handlers=64))
#: The WSGI app (gunicorn imports it; ``http`` mode serves it on werkzeug).
app: Any = server.wsgi_app(path="/mcp", session_idle_timeout=SESSION_IDLE,
                           keepalive_interval=5.0)


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def slow(ctx: HandlerContext, seconds: float = 5.0) -> str:
    """Sleep cooperatively (a client timeout or disconnect cancels it)."""
    ctx.sleep(min(seconds, 30.0))
    return "finished"


@server.tool()
def work(ctx: HandlerContext, steps: int = 3) -> str:
    """Report progress and log ``steps`` times."""
    for i in range(min(steps, 20)):
        ctx.progress(i + 1, total=steps)
        ctx.log("info", {"step": i}, logger="soak")
    return "worked"


@server.tool()
def ask(ctx: HandlerContext) -> str:
    """Ask the client a question (elicitation: a server request, or MRTR in 2026-07-28)."""
    answer = ctx.elicit("Your name?", {"type": "object",
                                       "properties": {"name": {"type": "string"}}})
    return f"answer: {getattr(answer, 'action', answer)}"


@server.tool()
def bump() -> str:
    """Announce that ``soak://feed`` changed (to its subscribers and listeners)."""
    server.notify_resource_updated("soak://feed")
    return "bumped"


@server.resource("soak://feed", mime_type="text/plain")
def feed() -> str:
    """A resource to subscribe to and listen for."""
    return "feed"


def _event_store_size() -> tuple[int, int, int]:
    """(streams, events, bytes) held by the app's in-memory event store."""
    store = app.store
    streams = getattr(store, "_streams", None)
    if streams is None:
        return 0, 0, 0
    with store._lock:
        entries = list(streams.values())
    events = sum(len(deque) for _, deque in entries)
    size = sum(len(data) for _, deque in entries for _, data in list(deque))
    return len(entries), events, size


@server.tool()
def soak_stats() -> dict[str, Any]:
    """The server's tables right now (reads private attributes: a benchmark's tool)."""
    gc.collect()
    sessions = server.sessions()
    inflight = pending = 0
    for session in sessions:
        connection = getattr(session, "_connection", None)
        if connection is not None:
            inflight += connection.inflight_count
            pending += connection.pending_count
    streams, events, event_bytes = _event_store_size()
    pool = getattr(app, "_pool", None)
    return {
        "server_sessions": len(sessions),
        "http_sessions": len(app.sessions),
        "listeners": len(server.listeners),
        "inflight": inflight,
        "pending": pending,
        "event_streams": streams,
        "events": events,
        "event_bytes": event_bytes,
        "http_pool_threads": len(getattr(pool, "_threads", ())),
        "threads": threading.active_count(),
    }


def _serve_http(port: int) -> None:
    from werkzeug.serving import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass

    httpd = make_server("127.0.0.1", port, app, threaded=True, request_handler=Quiet)
    httpd.daemon_threads = True
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        app.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        _serve_http(int(sys.argv[2]))
    else:
        server.run_stdio()
