"""A Celery worker runs only what the web side queued: the message on the broker is signed
with the server's key and checked against the task's record, so whoever can write to the
broker cannot run a tool (or other arguments) in a live task's name. Real Celery workers
on the run's ``redis-server``, real gunicorn in front (tests/on_celery/app.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from mcpsync import Client, Server
from mcpsync.celery import CeleryExecutor
from mcpsync.errors import MCPError
from mcpsync.redis import RedisTaskStore
from mcpsync.tasks.remote import sign_payload
from tests.helpers import wait_until
from tests.on_celery.app import build
from tests.serving import RunningServer

from .test_celery_tasks import WAIT, client, web

#: The web side (gunicorn, 2 workers) of tests/on_celery/test_celery_tasks.py.
gunicorn_web = web

FORGED_TOOL_ARGUMENTS = {"steps": 1}


@pytest.fixture
def victim(gunicorn_web: str, redis_url: str,
           redis_prefix: str) -> Iterator[tuple[Client, Any]]:
    """A live task (``hold``, queued while no worker runs) and its client; its hold is
    released at the end so the worker stops at once."""
    with client(gunicorn_web, "2026-07-28") as c:
        handle = c.start_task("hold", {"key": "victim"})
        yield c, handle
    redis.Redis.from_url(redis_url).set(f"{redis_prefix}:victim", 1)


def forged(task_id: str, *, tool: str = "work", owner: str = "") -> dict[str, Any]:
    """What an attacker writes to the broker: a live task's id, another tool and
    arguments (retry-safe, so a task already running is run again)."""
    return {"task_id": task_id, "tool": tool, "surface": "v2", "owner": owner,
            "params": {"name": tool, "arguments": FORGED_TOOL_ARGUMENTS},
            "info": {"protocol_version": "2026-07-28", "client_info": None,
                     "client_capabilities": {}, "session_id": None},
            "transport": {"kind": "http"}, "v1_failed_on_error": False, "retry_safe": True}


def send(redis_url: str, redis_prefix: str, data: dict[str, Any]) -> None:
    celery_app, _ = build(redis_url, redis_prefix)
    celery_app.send_task("mcpsync.run_task.retry_safe", args=(data,),
                         queue=f"{redis_prefix}-tasks")


def ended(handle: Any) -> Any:
    final = None

    def terminal() -> bool:
        nonlocal final
        final = handle.status()
        return final.status in ("completed", "failed", "cancelled")

    wait_until(terminal, timeout=WAIT, message=lambda: repr(final))
    return final


def work_runs(redis_url: str, redis_prefix: str) -> int:
    return int(redis.Redis.from_url(redis_url).get(f"{redis_prefix}:work-runs") or 0)


@pytest.mark.parametrize("signature", ["none", "another key"])
def test_a_forged_message_for_a_live_task_never_runs_its_tool(
        victim, workers, redis_url, redis_prefix, signature):
    _, handle = victim
    data = forged(handle.id)
    if signature == "another key":
        data = sign_payload(b"not the server's key", data)
    send(redis_url, redis_prefix, data)
    worker = workers()
    final = ended(handle)
    assert work_runs(redis_url, redis_prefix) == 0  # the forged tool never ran
    assert final.status == "failed"
    assert "signature" in (final.status_message or "")
    assert "request_state_key" in (final.status_message or "")
    wait_until(lambda: any("refused" in line for line in worker.log), timeout=WAIT,
               message=lambda: "".join(worker.log))


def test_a_signed_message_naming_another_tool_than_the_record_is_refused(
        victim, workers, redis_url, redis_prefix):
    """Even signed with the server's key (a message made for another task), a message
    whose tool or owner differs from the record's is refused."""
    _, handle = victim
    send(redis_url, redis_prefix, sign_payload(f"{redis_prefix}-state".encode(),
                                               forged(handle.id)))
    workers()
    final = ended(handle)
    assert work_runs(redis_url, redis_prefix) == 0
    assert final.status == "failed"
    assert "names the tool 'work'" in (final.status_message or "")


def test_the_web_side_refuses_to_queue_a_task_without_a_shared_key(
        redis_url, redis_prefix, monkeypatch):
    """Without a configured key each process would sign with its own: no worker could
    run anything. The call fails at once, saying what to set, and nothing is queued."""
    from celery import Celery

    monkeypatch.delenv("MCPSYNC_REQUEST_STATE_KEY", raising=False)
    celery_app = Celery(f"no-key-{redis_prefix}", broker=redis_url)
    server = Server("no-key", task_store=RedisTaskStore(redis_url, prefix=redis_prefix),
                    task_executor=CeleryExecutor(celery_app, queue=f"{redis_prefix}-no-key"))

    @server.tool(task="required")
    def slow() -> str:
        return "ran"

    with RunningServer(server.wsgi_app(path="/mcp")) as running, \
            client(f"{running.base}/mcp", "2026-07-28") as c, \
            pytest.raises(MCPError, match="request_state_key"):
        c.start_task("slow", {})
    assert redis.Redis.from_url(redis_url).llen(f"{redis_prefix}-no-key") == 0
