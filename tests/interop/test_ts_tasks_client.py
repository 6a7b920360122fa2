"""The TypeScript SDK (``@modelcontextprotocol/sdk`` 1.32.2, its ``experimental.tasks``
client: tasks v1, 2025-11-25) driving an mcpsync server's tasks over stdio: task creation
with ``params.task``, status polling, ``tasks/result``, an elicitation related to the task,
a tool error as a failed task, ``tasks/get`` and ``tasks/list``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.interop import peers

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("node") / "ts_tasks_client.mjs"
RELATED = "io.modelcontextprotocol/related-task"


def sdk_dir() -> str:
    package = peers.peers_dir().joinpath("npm", "node_modules", "@modelcontextprotocol", "sdk")
    peers._existing(package / "dist" / "esm" / "experimental" / "tasks" / "client.js",
                    "@modelcontextprotocol/sdk 1.32.2")
    return str(package)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    node = peers.require(peers.node22)
    sdk = peers.require(sdk_dir)
    env = peers.node_env()
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([node, str(SCRIPT), sdk, sys.executable, "tests.tasks.task_server"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_capabilities_and_tool_task_support(report: dict[str, Any]) -> None:
    assert report["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert report["taskSupport"]["slow"] == "optional"
    assert report["taskSupport"]["must_task"] == "required"
    assert report["taskSupport"]["plain"] is None


def test_a_task_runs_to_its_result(report: dict[str, Any]) -> None:
    kinds = [m["type"] for m in report["slow"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result"
    task_id = report["slow"][0]["task"]["taskId"]
    result = report["slow"][-1]["result"]
    assert result["content"][0]["text"] == "slept 0.3"
    assert result["_meta"][RELATED] == {"taskId": task_id}
    assert report["getTask"]["status"] == "completed"
    assert task_id in {t["taskId"] for t in report["list"]["tasks"]}


def test_an_elicitation_inside_a_task(report: dict[str, Any]) -> None:
    assert report["ask"][-1]["result"]["content"][0]["text"] == "Hello, Tess!"
    task_id = report["ask"][0]["task"]["taskId"]
    [elicitation] = report["elicitations"]
    assert elicitation["params"]["_meta"][RELATED] == {"taskId": task_id}
    assert elicitation["statusWhileAsking"] == "input_required"


def test_a_tool_error_is_a_failed_task(report: dict[str, Any]) -> None:
    statuses = [m.get("status") for m in report["toolError"] if m["type"] == "taskStatus"]
    assert statuses[-1] == "failed"
