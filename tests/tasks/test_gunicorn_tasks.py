"""tasks/get and tasks/result under real gunicorn with 2 workers sharing one SQLite task
store: a task created on one worker is served by the other, in both task surfaces (v1 in
the handshake era, with sessions in a shared directory; v2 in 2026-07-28)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import require_module, run_threads, wait_until
from tests.http.raw import BOTH, LegacySession, answer_of, envelope
from tests.serving import running_gunicorn

require_module("gunicorn")

ROOT = Path(__file__).resolve().parents[2]
EXT = "io.modelcontextprotocol/tasks"
CAPS_V2 = {"extensions": {EXT: {}}}

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="gunicorn is POSIX only")


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    env = dict(os.environ, MCPSYNC_TEST_TASK_STORE=str(tmp_path / "tasks.db"),
               MCPSYNC_TEST_SESSIONS=str(tmp_path / "sessions"))
    with running_gunicorn("tests.tasks.gunicorn_task_server:app", env=env) as base:
        yield f"{base}/mcp"


def modern(url: str, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One 2026-07-28 request with the tasks extension, on a fresh connection: the worker
    that answered, and the answer."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {**params, "_meta": envelope(capabilities=CAPS_V2)}}
    headers = {"Content-Type": "application/json", "Accept": BOTH,
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    name = params.get("name") or params.get("taskId")
    if name:
        headers["Mcp-Name"] = name
    response = requests.post(url, data=json.dumps(body), headers=headers, timeout=WAIT,
                             stream=True)
    return int(response.headers["X-Worker-Pid"]), answer_of(response, 1)


def test_v2_a_task_created_on_one_worker_is_polled_on_the_other(url):
    creator, created = modern(url, "tools/call", {"name": "slow", "arguments": {"seconds": 1.0}})
    task_id = created["result"]["taskId"]
    seen: dict[int, list[dict[str, Any]]] = {}

    def both_workers_done() -> bool:
        pid, answer = modern(url, "tasks/get", {"taskId": task_id})
        seen.setdefault(pid, []).append(answer["result"])
        others = [r for p, rs in seen.items() if p != creator for r in rs]
        return any(r["status"] == "completed" for r in others)

    wait_until(both_workers_done, timeout=WAIT, interval=0.05,
               message=lambda: f"answers by worker: {seen}")
    done = next(r for p, rs in seen.items() if p != creator for r in rs
                if r["status"] == "completed")
    assert done["result"]["content"][0]["text"] == "slept 1.0"


def legacy(session: LegacySession, method: str,
           params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One request in a 2025-11-25 session, on a fresh connection: the worker that
    answered, and the answer."""
    request_id, response = session.request(method, params, stream=True)
    return int(response.headers["X-Worker-Pid"]), answer_of(response, request_id)


def test_v1_tasks_result_blocks_on_another_worker_until_the_task_ends(url):
    session = LegacySession(url, capabilities={"tasks": {}})
    for _ in range(10):
        creator, created = legacy(session, "tools/call", {
            "name": "slow", "arguments": {"seconds": 2.0}, "task": {"ttl": 60_000}})
        task_id = created["result"]["task"]["taskId"]
        # several tasks/result at once, each on its own connection: some reach the other
        # worker, which waits for a task that another process runs
        answers = run_threads(lambda i, task_id=task_id: legacy(
            session, "tasks/result", {"taskId": task_id}), 8, name="t-gunicorn-result",
            timeout=WAIT)
        for _, answer in answers:
            assert answer["result"]["content"][0]["text"] == "slept 2.0", answer
        if any(pid != creator for pid, _ in answers):
            return
    pytest.fail("no tasks/result reached the other worker in 10 attempts")
