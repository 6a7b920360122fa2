"""One module that builds the Celery app, the server and its tools: what gunicorn serves
(``tests.on_celery.app:wsgi``) and what ``celery -A tests.on_celery.app:celery_app worker``
imports, as docs/celery.md lays a project out. Configured from the environment, so the
test process, gunicorn's workers and Celery's workers build the same server:
``MCPSYNC_TEST_REDIS`` (broker and task store), ``MCPSYNC_TEST_PREFIX`` (keys and queue).
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis
from celery import Celery

from mcpsync import HandlerContext, Server
from mcpsync.celery import CeleryExecutor
from mcpsync.protocol.versions import MODERN_VERSIONS
from mcpsync.redis import RedisTaskStore
from mcpsync.server.options import ProtocolOptions


def build(url: str, prefix: str, *, max_queued: int | None = None,
          threads: bool = False) -> tuple[Celery, Server]:
    """The Celery app and the server of one deployment (one Redis, one key prefix);
    ``threads=True``: the same server with its tasks on threads (for the benchmark)."""
    celery_app = Celery(f"mcpsync-test-{prefix}", broker=url)
    celery_app.conf.update(worker_prefetch_multiplier=1, task_default_queue=f"{prefix}-tasks",
                           broker_connection_retry_on_startup=True,
                           worker_hijack_root_logger=False)
    store = RedisTaskStore(url, prefix=prefix, heartbeat_ttl=3.0)
    executor = None if threads else CeleryExecutor(celery_app, max_queued=max_queued)
    server = Server("on-celery", task_store=store, task_executor=executor,
                    request_state_key=f"{prefix}-state",
                    protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    counts = redis.Redis.from_url(url)

    @server.tool(task="optional")
    def work(ctx: HandlerContext, steps: int = 3) -> str:
        """Report progress, then finish: says which process ran it."""
        counts.incr(f"{prefix}:work-runs")
        for step in range(1, steps + 1):
            ctx.check_cancelled()
            ctx.progress(step, steps, f"step {step} in pid {os.getpid()}")
        return f"done in pid {os.getpid()}"

    @server.tool(task="required")
    def greet(ctx: HandlerContext) -> str:
        """Ask the client for a name (an input request answered on any web worker)."""
        answer = ctx.elicit("Your name?", {"type": "object",
                                           "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name'] if answer.content else 'nobody'}"

    @server.tool(task="required")
    def hold(ctx: HandlerContext, key: str) -> str:
        """Say its pid, then wait (cancellable) until ``key`` is set in Redis."""
        ctx.progress(1, None, f"holding in pid {os.getpid()}")
        while not counts.exists(f"{prefix}:{key}"):
            ctx.sleep(0.05)
        return f"released in pid {os.getpid()}"

    def lose(ctx: HandlerContext, key: str) -> str:
        """Count its runs; the first says its pid and waits to be killed."""
        runs = counts.incr(f"{prefix}:runs:{key}")
        if runs == 1:
            ctx.progress(1, None, f"run 1 in pid {os.getpid()}")
            while True:
                ctx.sleep(0.05)
        return f"run {runs}"

    server.add_tool(lose, name="lose", task="required")
    server.add_tool(lose, name="lose_retry_safe", task="required", retry_safe=True)

    @server.tool(task="required")
    def stamp(key: str) -> str:
        """Record when it started running (for the benchmark's create -> running)."""
        counts.set(f"{prefix}:start:{key}", repr(time.time()))
        return key

    @server.tool(task="required")
    def crash(ctx: HandlerContext) -> str:
        """Raise: the task fails as it would on a thread."""
        raise RuntimeError("secret internals")

    return celery_app, server


def scaled_out(server: Server, url: str, prefix: str) -> Any:
    """The server's WSGI app for several web workers: sessions, events and the relay on
    the same Redis (docs/deploying.md); the relay also carries the status of tasks run on
    Celery to the listens following them."""
    from mcpsync.redis import RedisBus, RedisEventStore, RedisSessionStore

    bus = RedisBus(url, prefix=prefix)
    server.relay_events(bus)
    return server.wsgi_app(path="/mcp", session_store=RedisSessionStore(url, prefix=prefix),
                           event_store=RedisEventStore(url, prefix=prefix), bus=bus)


def _from_env() -> tuple[Any, Any, Any]:
    url = os.environ.get("MCPSYNC_TEST_REDIS")
    if not url:
        return None, None, None
    prefix = os.environ["MCPSYNC_TEST_PREFIX"]
    celery_app, server = build(url, prefix)
    return celery_app, server, scaled_out(server, url, prefix)


celery_app, server, wsgi = _from_env()
