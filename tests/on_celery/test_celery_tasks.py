"""Tasks run on real Celery workers (prefork and threads pools) over the run's
``redis-server``, called through mcpsync's ``Client`` on both task surfaces, with real
gunicorn (2 workers, sessions and the relay on the same Redis) in front: the web side
serves the same server definition as the Celery workers import (tests/on_celery/app.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from mcpsync import Client
from mcpsync.celery import QUEUED_MESSAGE
from mcpsync.client.options import HostHandlers
from mcpsync.errors import MCPError
from mcpsync.tasks.remote import lost_runner_message
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import require_module, wait_until
from tests.http.raw import LegacySession
from tests.on_celery.app import build
from tests.serving import (
    RunningServer,
    free_port,
    gunicorn_argv,
    running_gunicorn,
    serving_process,
)

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ["2026-07-28", "2025-11-25"]


@pytest.fixture
def web(deployment_env: dict[str, str]) -> Iterator[str]:
    """The web side of the deployment: gunicorn with 2 workers; its URL."""
    require_module("gunicorn")
    with running_gunicorn("tests.on_celery.app:wsgi", env=deployment_env, threads=4) as base:
        yield f"{base}/mcp"


def client(url: str, version: str, **options: Any) -> Client:
    return Client.http(url, protocol_version=version, timeout=WAIT, **options)


def state(handle: Any) -> Any:
    return handle.status()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_a_task_with_progress_runs_on_a_celery_worker(web, workers, version, pool):
    worker = workers(pool=pool)
    with client(web, version) as c:
        handle = c.start_task("work", {"steps": 3})
        result = handle.result(timeout=WAIT)
        final = handle.status()
    assert result.text.startswith("done in pid ")
    pid = int(result.text.rsplit(" ", 1)[1])
    assert pid != os.getpid()  # ran on the worker, not here
    if pool == "threads":
        assert pid == worker.proc.pid
    assert final.status == "completed"
    assert final.status_message == f"step 3 in pid {pid}"  # progress, through the store


def test_an_elicitation_is_answered_through_tasks_update(web, workers):
    workers()
    answered = []

    def elicit(params: Any) -> dict[str, Any]:
        answered.append(params.message)
        return {"action": "accept", "content": {"name": "Ada"}}

    with client(web, "2026-07-28", host=HostHandlers(elicitation=elicit)) as c:
        result = c.call_tool("greet", {}, timeout=WAIT)
    assert result.text == "hello Ada"
    assert answered == ["Your name?"]


def test_a_v1_question_from_a_celery_worker_fails_clearly(web, workers):
    """A 2025-11-25 v1 task (a raw session: mcpsync's client prefers the extension) cannot
    ask over the session, which lives in the web process: the tool gets a clear error."""
    workers()
    session = LegacySession(web, "2025-11-25", capabilities={"elicitation": {}})
    created = session.call("tools/call", {"name": "greet", "arguments": {}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    answer = session.call("tasks/result", {"taskId": task_id})
    got = session.call("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "failed"  # v1: a tool error result fails the task
    assert answer["result"]["isError"] is True
    assert "runs in another process than the 2025-11-25 session" in \
        answer["result"]["content"][0]["text"]


def test_a_task_queued_with_no_worker_says_so_and_cancelled_never_runs(
        web, workers, redis_url, redis_prefix):
    with client(web, "2026-07-28") as c:
        handle = c.start_task("hold", {"key": "never"})
        queued = handle.status()
        assert (queued.status, queued.status_message) == ("working", QUEUED_MESSAGE)
        handle.cancel()
        workers()  # now a worker takes the message: it must not run the task
        runs_after = handle.status()
        assert runs_after.status == "cancelled"
        # A later task completes on that worker: the cancelled one was consumed before it.
        assert c.start_task("work", {"steps": 1}).result(timeout=WAIT).text.startswith("done")
        assert handle.status().status == "cancelled"
    assert not redis.Redis.from_url(redis_url).exists(f"{redis_prefix}:never")


def test_cancel_while_running_stops_the_worker_s_task(web, workers):
    workers()
    with client(web, "2026-07-28") as c:
        handle = c.start_task("hold", {"key": "forever"})
        wait_until(lambda: (handle.status().status_message or "").startswith("holding"),
                   timeout=WAIT)
        handle.cancel()
        wait_until(lambda: handle.status().status == "cancelled", timeout=WAIT)


def test_a_raising_tool_fails_the_same_way_as_on_a_thread(web, workers):
    workers()
    with client(web, "2026-07-28") as c:
        handle = c.start_task("crash", {})
        result = handle.result(timeout=WAIT)
        final = handle.status()
    # As on a thread: the tool's exception is its error result, the task completes with
    # it, and what the exception said stays in the worker's log, off the wire.
    assert result.is_error and "secret internals" not in result.text
    assert result.text.startswith("Error executing tool crash: an internal error occurred")
    assert final.status == "completed"


def test_fifty_tasks_across_two_workers_all_complete_once(web, workers, redis_url,
                                                          redis_prefix):
    workers("w1")
    workers("w2")
    with client(web, "2026-07-28") as c:
        handles = [c.start_task("work", {"steps": 1}) for _ in range(50)]
        texts = [h.result(timeout=WAIT).text for h in handles]
    pids = {t.rsplit(" ", 1)[1] for t in texts}
    assert len(texts) == 50 and all(t.startswith("done in pid ") for t in texts)
    assert len(pids) >= 2  # both workers' processes took some
    assert int(redis.Redis.from_url(redis_url).get(f"{redis_prefix}:work-runs") or 0) == 50


def _running_pid(handle: Any) -> int:
    message = ""

    def said_pid() -> bool:
        nonlocal message
        message = handle.status().status_message or ""
        return "pid" in message

    wait_until(said_pid, timeout=WAIT, message=lambda: message)
    found = re.search(r"pid (\d+)", message)
    assert found is not None
    return int(found.group(1))


def test_a_retry_safe_task_survives_the_sigkill_of_its_worker_process(
        web, workers, redis_url, redis_prefix):
    workers()
    with client(web, "2026-07-28") as c:
        handle = c.start_task("lose_retry_safe", {"key": "a"})
        pid = _running_pid(handle)
        os.kill(pid, signal.SIGKILL)
        assert handle.result(timeout=WAIT).text == "run 2"
        final = handle.status()
    # Completed once, by the second delivery; the first run's progress was kept meanwhile.
    assert final.status == "completed"
    assert final.status_message == f"run 1 in pid {pid}"
    assert int(redis.Redis.from_url(redis_url).get(f"{redis_prefix}:runs:a") or 0) == 2


def test_a_task_not_retry_safe_fails_in_bound_when_its_worker_process_is_killed(
        web, workers, redis_url, redis_prefix):
    workers()
    with client(web, "2026-07-28") as c:
        handle = c.start_task("lose", {"key": "b"})
        pid = _running_pid(handle)
        os.kill(pid, signal.SIGKILL)
        # Bound: the store's heartbeat_ttl (3 s here) after the loss, on the next read.
        wait_until(lambda: handle.status().status == "failed", timeout=WAIT)
        final = handle.status()
    assert f"pid {pid}" in (final.status_message or "")
    assert int(redis.Redis.from_url(redis_url).get(f"{redis_prefix}:runs:b") or 0) == 1


def test_a_queue_at_its_bound_refuses_new_tasks(redis_url, redis_prefix):
    _, server = build(redis_url, redis_prefix, max_queued=2)
    with RunningServer(server.wsgi_app(path="/mcp")) as running, \
            client(f"{running.base}/mcp", "2026-07-28") as c:
        c.start_task("work", {"steps": 1})
        c.start_task("work", {"steps": 1})
        with pytest.raises(MCPError, match="too many tasks queued"):
            c.start_task("work", {"steps": 1})


def test_the_lost_runner_message_names_the_process():
    assert lost_runner_message("host-a:123:abc") == (
        "the worker running this task was lost (pid 123 on host-a); the tool is not "
        "retry_safe, so it was not run again")


def test_the_typescript_sdk_v1_client_completes_a_task_run_on_celery(web, workers):
    """``@modelcontextprotocol/sdk`` 1.32's tasks client (v1) over Streamable HTTP."""
    from tests.interop import peers
    from tests.interop.test_ts_tasks_client import sdk_dir

    node = peers.require(peers.node22)
    sdk = peers.require(sdk_dir)
    worker = workers()
    script = Path(__file__).parents[1] / "interop" / "node" / "ts_celery_client.mjs"
    proc = subprocess.run([node, str(script), sdk, web], capture_output=True, text=True,
                          timeout=120, env=peers.node_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    kinds = [m["type"] for m in report["stream"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result", report
    text = report["stream"][-1]["result"]["content"][0]["text"]
    assert text.startswith("done in pid ") and int(text.rsplit(" ", 1)[1]) != os.getpid()
    assert report["getTask"]["status"] == "completed"
    assert worker.proc.poll() is None


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found.extend(int(child) for child in children)
    return found


def test_a_task_runs_on_after_every_web_worker_is_killed(workers, deployment_env,
                                                         redis_url, redis_prefix):
    """SIGKILL both gunicorn workers (the one that accepted the task among them) after
    ``tools/call`` was answered: the task completes on Celery, and a respawned web worker
    answers for it."""
    require_module("gunicorn")
    workers()
    port = free_port()
    argv = gunicorn_argv("tests.on_celery.app:wsgi", port, threads=4)
    with serving_process(argv, port, cwd=ROOT, env=deployment_env) as base:
        url = f"{base}/mcp"
        master = _gunicorn_master(port)
        with client(url, "2026-07-28") as c:
            handle = c.start_task("hold", {"key": "go"})
            wait_until(lambda: (handle.status().status_message or "").startswith("holding"),
                       timeout=WAIT)
        before = _children(master)
        assert len(before) == 2
        for pid in before:
            os.kill(pid, signal.SIGKILL)
        redis.Redis.from_url(redis_url).set(f"{redis_prefix}:go", b"1")
        wait_until(lambda: len(set(_children(master)) - set(before)) == 2, timeout=WAIT)
        with client(url, "2026-07-28") as c:
            result = _result_by_id(c, handle.id)
    assert result["content"][0]["text"].startswith("released in pid ")


def _gunicorn_master(port: int) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"gunicorn" in b" ".join(cmdline) and f"127.0.0.1:{port}".encode() in cmdline:
            status = (entry / "status").read_text()
            ppid = int(next(line.split()[1] for line in status.splitlines()
                            if line.startswith("PPid:")))
            if ppid == os.getpid():
                return int(entry.name)
    raise AssertionError("no gunicorn master found")


def _result_by_id(c: Client, task_id: str) -> dict[str, Any]:
    """Poll ``tasks/get`` (the 2026-07-28 extension) until the task ends; its result."""
    answer: dict[str, Any] = {}

    def ended() -> bool:
        nonlocal answer
        answer = c.request("tasks/get", {"taskId": task_id})
        return answer.get("status") in ("completed", "failed", "cancelled")

    wait_until(ended, timeout=WAIT, interval=0.1, message=lambda: answer)
    assert answer["status"] == "completed", answer
    return dict(answer["result"])


def test_a_listen_on_the_web_side_hears_the_status_of_a_task_run_on_celery(
        web, workers, redis_url, redis_prefix):
    """The worker publishes each status on the relay bus (``server.relay_events``), so a
    ``subscriptions/listen`` held by a gunicorn worker hears it without polling."""
    workers()
    with client(web, "2026-07-28") as c:
        handle = c.start_task("hold", {"key": "listen"})
        heard: list[tuple[str, str | None]] = []
        with handle.subscribe() as updates:
            wait_until(lambda: (handle.status().status_message or "").startswith("holding"),
                       timeout=WAIT)
            redis.Redis.from_url(redis_url).set(f"{redis_prefix}:listen", b"1")
            while not heard or heard[-1][0] not in ("completed", "failed", "cancelled"):
                note = updates.get(timeout=WAIT)  # bounded: no notification fails the test
                assert note is not None, f"no status pushed; heard {heard}"
                heard.append((note.params["status"], note.params.get("statusMessage")))
    assert heard[-1][0] == "completed", heard
