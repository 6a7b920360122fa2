"""The examples of docs/tasks.md run, as tasks, the way the page says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Server
from tests.helpers import wait_until
from tests.tasks.peers import WAIT, Peer

DOC = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"


def example(index: int) -> Server:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    namespace: dict[str, Any] = {}
    exec(compile(blocks[index], f"{DOC}:block{index}", "exec"), namespace)
    server: Server = namespace["server"]
    return server


def settle(peer: Peer, task_id: str, *statuses: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def reached() -> bool:
        seen.update(peer.result("tasks/get", {"taskId": task_id}))
        return seen["status"] in (statuses or ("completed", "failed", "cancelled"))

    wait_until(reached, timeout=WAIT, interval=0.05)
    return seen


def test_the_report_example_as_a_v2_task() -> None:
    server = example(0)
    peer = Peer("memory", "modern", server=server)
    try:
        created = peer.result("tools/call", {"name": "build_report", "arguments": {"year": 2026}})
        waiting = settle(peer, created["taskId"], "input_required")
        assert waiting["statusMessage"] == "quarter 4 of 4"
        [key] = waiting["inputRequests"]
        peer.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {
            key: {"action": "accept", "content": {"ok": True}}}})
        done = settle(peer, created["taskId"])
        assert done["result"]["content"][0]["text"] == "report 2026: published"
        assert peer.error("tools/call", {"name": "reindex", "arguments": {}}, meta={
            "io.modelcontextprotocol/clientCapabilities": {}})["code"] == -32021
    finally:
        peer.close()
        server.close_tasks()


@pytest.mark.filterwarnings("ignore:no request_state_key")
def test_the_deferred_example() -> None:
    server = example(1)
    peer = Peer("memory", "modern", server=server)
    try:
        first = peer.result("tools/call", {"name": "export", "arguments": {}})
        [key] = first["inputRequests"]
        created = peer.result("tools/call", {
            "name": "export", "arguments": {}, "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"path": "a.csv"}}}})
        done = settle(peer, created["taskId"])
        assert done["result"]["content"][0]["text"] == "exported to a.csv"
    finally:
        peer.close()
        server.close_tasks()
