"""Two gunicorn workers sharing one SQLite task store: a task created on one worker is read
and completed on the other; a worker killed while its task is working is replaced, and the
replacement (opening the file) marks the task failed, which every worker then reports."""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client
from mcpsync.tasks.sqlite import RUNNER_EXITED
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import require_module, wait_until
from tests.serving import running_gunicorn

ROOT = Path(__file__).resolve().parents[2]

require_module("gunicorn")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="gunicorn is POSIX only")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[str]:
    """``tests.tasks.gunicorn_tasks:app`` under gunicorn with 2 workers; its /mcp URL."""
    env = dict(os.environ, MCPSYNC_TEST_TASK_STORE=str(tmp_path / "tasks.db"))
    with running_gunicorn("tests.tasks.gunicorn_tasks:app", env=env, threads=4) as base:
        yield f"{base}/mcp"


def call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """One call on a fresh connection (so successive calls may reach either worker)."""
    with Client.http(url, timeout=WAIT) as client:
        result = client.call_tool(tool, arguments)
    assert not result.is_error, result
    text = result.content[0].text  # type: ignore[union-attr]
    return json.loads(text)  # type: ignore[no-any-return]


def on_another_worker(url: str, than: int, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool`` until a worker other than pid ``than`` answers (bounded)."""
    answers: list[dict[str, Any]] = []

    def other() -> bool:
        answers.append(call(url, tool, **arguments))
        return answers[-1]["pid"] != than

    wait_until(other, timeout=WAIT, message=f"every call reached worker {than}")
    return answers[-1]


def test_a_task_created_on_one_worker_is_served_by_the_other(workers):
    task_id = secrets.token_urlsafe(16)
    creator = call(workers, "start", task_id=task_id)["pid"]
    seen = on_another_worker(workers, creator, "look", task_id=task_id)
    assert seen["status"] == "working"
    completer = call(workers, "complete", task_id=task_id, text="done")["pid"]
    seen = on_another_worker(workers, completer, "look", task_id=task_id)
    assert (seen["status"], seen["result"]) == (
        "completed", {"content": [{"type": "text", "text": "done"}]})


def test_a_killed_worker_s_task_becomes_failed_on_every_worker(workers):
    task_id = secrets.token_urlsafe(16)
    done_id = secrets.token_urlsafe(16)
    victim = call(workers, "start", task_id=task_id)["pid"]
    call(workers, "start", task_id=done_id)
    call(workers, "complete", task_id=done_id, text="kept")
    os.kill(victim, signal.SIGKILL)  # gunicorn's master reaps it and starts another

    def failed() -> bool:
        return call(workers, "look", task_id=task_id)["status"] == "failed"

    wait_until(failed, timeout=WAIT, interval=0.2,
               message="the dead worker's task never became failed")
    seen = call(workers, "look", task_id=task_id)
    assert seen["error"] == RUNNER_EXITED
    assert call(workers, "look", task_id=done_id)["result"] == {
        "content": [{"type": "text", "text": "kept"}]}
