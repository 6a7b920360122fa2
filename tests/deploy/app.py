"""The app every gunicorn instance of the deploy tests serves (``tests.deploy.app:app``),
configured by environment variables:

- ``MCPSYNC_DEPLOY_INSTANCE`` / ``MCPSYNC_DEPLOY_PORT``: which instance this is (set by
  ``tests/deploy/topology.py``); tools and the ``X-Deploy-Instance`` / ``X-Deploy-Pid``
  response headers say which instance and worker answered;
- ``MCPSYNC_REQUEST_STATE_KEY``: the key that seals 2026-07-28 multi round-trip state
  (mcpsync reads it itself); the same on every instance, or retries are refused;
- ``MCPSYNC_DEPLOY_STORE``: ``none`` (default: memory stores, one worker's own),
  ``sqlite`` (tasks in the SQLite file ``MCPSYNC_DEPLOY_SQLITE``, shared by every worker
  on this host) or ``redis`` (sessions, events, tasks and the relay bus on
  ``MCPSYNC_DEPLOY_REDIS_URL`` under ``MCPSYNC_DEPLOY_REDIS_PREFIX``; a dead runner's tasks
  fail after ``MCPSYNC_DEPLOY_TASK_HEARTBEAT_TTL`` seconds if given). ``mcpsync.redis`` is
  imported only then, so the other configurations run without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from mcpsync import HandlerContext, Server

INSTANCE = os.environ.get("MCPSYNC_DEPLOY_INSTANCE", "?")
PORT = int(os.environ.get("MCPSYNC_DEPLOY_PORT", "0"))
STORE = os.environ.get("MCPSYNC_DEPLOY_STORE", "none")
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COUNTER_URI = "deploy://counter"


def where() -> dict[str, Any]:
    """Which instance (machine) and worker process this is."""
    return {"instance": INSTANCE, "port": PORT, "pid": os.getpid()}


def _stores() -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(Server options, wsgi_app options, bus or None) for ``MCPSYNC_DEPLOY_STORE``."""
    if STORE == "none":
        return {}, {}, None
    if STORE == "sqlite":
        from mcpsync import SqliteTaskStore

        return {"task_store": SqliteTaskStore(os.environ["MCPSYNC_DEPLOY_SQLITE"])}, {}, None
    if STORE == "redis":
        from mcpsync.redis.bus import RedisBus
        from mcpsync.redis.client import connect
        from mcpsync.redis.events import RedisEventStore
        from mcpsync.redis.sessions import RedisSessionStore
        from mcpsync.redis.tasks import RedisTaskStore

        redis = connect(os.environ["MCPSYNC_DEPLOY_REDIS_URL"])
        prefix = os.environ["MCPSYNC_DEPLOY_REDIS_PREFIX"]
        bus = RedisBus(redis, prefix=prefix)
        ttl = os.environ.get("MCPSYNC_DEPLOY_TASK_HEARTBEAT_TTL")  # a dead runner's tasks fail
        tasks = RedisTaskStore(redis, prefix=prefix,
                               **({"heartbeat_ttl": float(ttl)} if ttl else {}))
        return ({"task_store": tasks},
                {"session_store": RedisSessionStore(redis, prefix=prefix),
                 "event_store": RedisEventStore(redis, prefix=prefix), "bus": bus}, bus)
    raise RuntimeError(f"MCPSYNC_DEPLOY_STORE={STORE!r}: expected none, sqlite or redis")


server_options, app_options, bus = _stores()
server = Server("deploy-tests", "1.0.0", **server_options)
counter = {"value": 0}


@server.tool()
def whoami() -> dict[str, Any]:
    """Which instance and worker answered."""
    return where()


@server.tool()
def echo(text: str) -> str:
    """The text back (the benchmark's cheapest call)."""
    return text


@server.tool()
def block(ctx: HandlerContext, ms: int = 50) -> str:
    """Hold a handler thread for ``ms`` milliseconds (the benchmark's blocking tool)."""
    ctx.sleep(ms / 1000)
    return f"blocked {ms} ms"


@server.tool()
def ask(ctx: HandlerContext) -> dict[str, Any]:
    """Elicit a name. The question names the worker that asked; the result names the
    worker that finished (in 2026-07-28 the retry runs the handler again, maybe elsewhere)."""
    answer = ctx.elicit(f"Your name? asked by {INSTANCE}:{os.getpid()}", NAME)
    return {**where(), "action": answer.action, "name": (answer.content or {}).get("name")}


@server.tool()
def wait_for_cancel(ctx: HandlerContext, mark: str, seconds: float = 120.0) -> dict[str, Any]:
    """Wait until cancelled (or ``seconds``); when cancelled, leave the file ``mark``.cancelled
    in ``MCPSYNC_DEPLOY_MARKS`` so a test can see that the cancellation arrived."""
    ctx.progress(0, 1.0, f"waiting on {INSTANCE}")
    try:
        ctx.sleep(seconds)  # raises RequestCancelledError at once when cancelled
    finally:
        if ctx.cancelled.is_set():
            marks = os.environ["MCPSYNC_DEPLOY_MARKS"]
            name = "".join(c for c in mark if c.isalnum())
            with open(os.path.join(marks, f"{name}.cancelled"), "w") as file:
                file.write(INSTANCE)
    return where()


@server.tool(task="optional")
def slow(ctx: HandlerContext, seconds: float = 30.0) -> dict[str, Any]:
    """Run as a task when the client allows: sleeps (waking at once when cancelled)."""
    ctx.progress(0, 1.0, f"started on {INSTANCE}:{os.getpid()}")
    ctx.sleep(seconds)
    return where()


@server.tool()
def ticks(ctx: HandlerContext, count: int = 10, ms: int = 50) -> dict[str, Any]:
    """``count`` progress notifications and log messages, ``ms`` apart."""
    for i in range(1, count + 1):
        ctx.progress(i, total=count, message=f"tick {i} on {INSTANCE}")
        ctx.log("info", f"tick {i} on {INSTANCE}")
        ctx.sleep(ms / 1000)
    return where()


@server.tool()
def ticks_detached(ctx: HandlerContext, count: int = 10, ms: int = 50) -> dict[str, Any]:
    """Like ``ticks``, but on the session's own channel (the handshake era's GET stream,
    wherever it is held), each log message before its progress notification."""
    detached = ctx.detach()
    for i in range(1, count + 1):
        detached.log("info", f"tick {i} on {INSTANCE}")
        if ctx.progress_token is not None:  # (a detached progress() goes on the POST)
            detached.notify("notifications/progress", {
                "progressToken": ctx.progress_token, "progress": i, "total": count,
                "message": f"tick {i} on {INSTANCE}"})
        ctx.sleep(ms / 1000)
    return where()


@server.tool()
def bump() -> dict[str, Any]:
    """Change the counter resource and say so to whoever subscribed, on any worker
    (through the bus when there is one)."""
    counter["value"] += 1
    server.notify_resource_updated(COUNTER_URI)
    return {**where(), "value": counter["value"]}


@server.resource(COUNTER_URI, mime_type="application/json")
def read_counter() -> dict[str, Any]:
    """This worker's counter (the point is the notification, not the value)."""
    return {**where(), "value": counter["value"]}


if bus is not None:
    server.relay_events(bus)  # type: ignore[attr-defined]

_app = server.wsgi_app(path="/mcp", **app_options)


def _ready() -> None:
    """Say that this worker has imported the app (gunicorn's master listens before its
    workers have booted): a file ``<instance>-<pid>`` in ``MCPSYNC_DEPLOY_READY_DIR``."""
    directory = os.environ.get("MCPSYNC_DEPLOY_READY_DIR")
    if directory:
        with open(os.path.join(directory, f"{INSTANCE}-{os.getpid()}"), "w"):
            pass


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The MCP endpoint; every response says which instance and worker sent it."""
    def start(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
        return start_response(status, [*headers, ("X-Deploy-Instance", INSTANCE),
                                       ("X-Deploy-Pid", str(os.getpid()))], *exc)

    return _app(environ, start)  # type: ignore[no-any-return]


_ready()
