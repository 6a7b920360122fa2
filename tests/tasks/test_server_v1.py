"""Tasks v1 (2025-11-25) on the server: ``params.task`` on ``tools/call``, ``tasks/get``,
``tasks/result``, ``tasks/list``, ``tasks/cancel`` and ``notifications/tasks/status``.

Raw JSON-RPC in a 2025-11-25 session on memory, a stdio subprocess and HTTP; answers are
validated against the 2025-11-25 schema.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import ServerLimits
from tests.helpers import wait_until
from tests.serving import RunningServer
from tests.spec import validate
from tests.tasks.peers import LEGACY, PLAIN_CAPS, WAIT, Peer
from tests.tasks.task_server import make_server

RELATED = "io.modelcontextprotocol/related-task"
V1_CAPS: dict[str, Any] = {**PLAIN_CAPS, "tasks": {}}
KINDS = ["memory", "stdio", "http"]


@pytest.fixture(scope="module")
def http() -> Iterator[RunningServer]:
    from tests.tasks.task_server import server

    with RunningServer(server.wsgi_app()) as running:
        yield running


@pytest.fixture(scope="module", params=KINDS)
def peer(request: pytest.FixtureRequest, http: RunningServer) -> Iterator[Peer]:
    client = Peer(request.param, "legacy", V1_CAPS, http=http)
    yield client
    client.close()


def start(peer: Peer, tool: str, ttl: int | None = 60_000, **arguments: Any) -> str:
    task = {} if ttl is None else {"ttl": ttl}
    result = peer.result("tools/call", {"name": tool, "arguments": arguments, "task": task})
    validate(LEGACY, "CreateTaskResult", result)
    assert "resultType" not in result and "taskId" not in result
    task_id: str = result["task"]["taskId"]
    return task_id


def get(peer: Peer, task_id: str) -> dict[str, Any]:
    task = peer.result("tasks/get", {"taskId": task_id})
    validate(LEGACY, "GetTaskResult", task)
    return task


def settle(peer: Peer, task_id: str, *statuses: str) -> dict[str, Any]:
    wanted = statuses or ("completed", "failed", "cancelled")
    seen: dict[str, Any] = {}

    def reached() -> bool:
        seen.update(get(peer, task_id))
        return seen["status"] in wanted

    wait_until(reached, timeout=WAIT, interval=0.05,
               message=lambda: f"task {task_id} stuck at {seen.get('status')}")
    return seen


def test_initialize_declares_the_v1_capability(peer: Peer) -> None:
    caps = peer.init_result["capabilities"]
    assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def test_create_get_and_result(peer: Peer) -> None:
    task_id = start(peer, "slow", seconds=0.2)
    task = get(peer, task_id)
    assert task["ttl"] == 60_000 and isinstance(task["pollInterval"], int)
    result = peer.result("tasks/result", {"taskId": task_id})  # blocks until terminal
    validate(LEGACY, "CallToolResult", result)
    assert result["content"][0]["text"] == "slept 0.2"
    assert result["_meta"][RELATED] == {"taskId": task_id}
    assert get(peer, task_id)["status"] == "completed"


def test_a_tool_error_is_a_failed_task_with_its_result(peer: Peer) -> None:
    task_id = start(peer, "tool_error")
    assert settle(peer, task_id)["status"] == "failed"
    result = peer.result("tasks/result", {"taskId": task_id})
    assert result["isError"] is True and result["_meta"][RELATED] == {"taskId": task_id}


def test_a_protocol_error_is_the_error_of_tasks_result(peer: Peer) -> None:
    task_id = start(peer, "crash")
    assert settle(peer, task_id)["status"] == "failed"
    error = peer.error("tasks/result", {"taskId": task_id})
    assert error["code"] == -32602 and error["message"] == "no such widget"


def test_cancel_returns_the_task_and_refuses_a_terminal_one(peer: Peer) -> None:
    task_id = start(peer, "slow", seconds=60)
    cancelled = peer.result("tasks/cancel", {"taskId": task_id})
    validate(LEGACY, "CancelTaskResult", cancelled)
    assert cancelled["status"] == "cancelled"
    assert settle(peer, task_id)["status"] == "cancelled"
    assert peer.error("tasks/cancel", {"taskId": task_id})["code"] == -32602


def test_required_tool_without_params_task(peer: Peer) -> None:
    error = peer.error("tools/call", {"name": "must_task", "arguments": {}})
    assert error["code"] == -32601
    task_id = start(peer, "must_task", ttl=None)
    assert peer.result("tasks/result", {"taskId": task_id})["content"][0]["text"] == (
        "ran as a task")


def test_optional_tool_without_params_task_is_a_plain_call(peer: Peer) -> None:
    result = peer.result("tools/call", {"name": "slow", "arguments": {}})
    assert result["content"][0]["text"] == "slept 0.0" and "task" not in result


def test_list_and_unknown_ids(peer: Peer) -> None:
    task_id = start(peer, "slow")
    listed = peer.result("tasks/list", {})
    validate(LEGACY, "ListTasksResult", listed)
    assert task_id in {t["taskId"] for t in listed["tasks"]}
    assert peer.error("tasks/get", {"taskId": "nope"})["code"] == -32602
    assert peer.error("tasks/result", {"taskId": "nope"})["code"] == -32602
    assert peer.error("tasks/list", {"cursor": "nope"})["code"] == -32602
    assert peer.error("tasks/update", {"taskId": task_id,
                                       "inputResponses": {}})["code"] == -32601


def test_bad_task_param(peer: Peer) -> None:
    for task in ("soon", {"ttl": -1}, {"ttl": "1"}):
        error = peer.error("tools/call", {"name": "slow", "arguments": {}, "task": task})
        assert error["code"] == -32602, task


def test_tasks_list_pages_and_is_per_session() -> None:
    server = make_server(limits=ServerLimits(page_size=2))
    alice, bob = (Peer("memory", "legacy", V1_CAPS, server=server) for _ in range(2))
    try:
        mine = [start(alice, "slow") for _ in range(3)]
        first = alice.result("tasks/list", {})
        assert len(first["tasks"]) == 2 and "nextCursor" in first
        rest = alice.result("tasks/list", {"cursor": first["nextCursor"]})
        assert [t["taskId"] for t in first["tasks"] + rest["tasks"]] == mine
        assert "nextCursor" not in rest
        assert bob.result("tasks/list", {})["tasks"] == []
        assert bob.error("tasks/get", {"taskId": mine[0]})["code"] == -32602
    finally:
        alice.close()
        bob.close()
        server.close_tasks()


@pytest.mark.parametrize("kind", ["memory", "stdio"])
def test_questions_are_requests_related_to_the_task(kind: str) -> None:
    asked = threading.Event()
    answer_now = threading.Event()

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        asked.set()
        assert answer_now.wait(WAIT)
        return {"action": "accept", "content": {"name": "Di"}}

    peer = Peer(kind, "legacy", V1_CAPS, answer=answer)
    try:
        task_id = start(peer, "ask_name")
        assert asked.wait(WAIT)
        assert settle(peer, task_id, "input_required")["status"] == "input_required"
        [request] = peer.server_requests
        assert request["method"] == "elicitation/create"
        assert request["params"]["_meta"][RELATED] == {"taskId": task_id}
        answer_now.set()
        result = peer.result("tasks/result", {"taskId": task_id})
        assert result["content"][0]["text"] == "Hello, Di!"
        def statuses() -> list[str]:
            return [n["params"]["status"] for n in peer.notifications
                    if n["method"] == "notifications/tasks/status"
                    and n["params"]["taskId"] == task_id]

        # The last notification may follow the tasks/result answer: wait for it.
        wait_until(lambda: "completed" in statuses(), timeout=WAIT)
        assert statuses() == ["input_required", "working", "completed"]
        for note in peer.notifications:
            validate(LEGACY, "JSONRPCNotification", note)
    finally:
        peer.close()


def test_defer_task_in_the_handshake_era_asks_by_request() -> None:
    def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        return {"action": "accept", "content": {"name": "Ed"}}

    peer = Peer("memory", "legacy", V1_CAPS, answer=answer)
    try:
        task_id = start(peer, "ask_then_task")
        assert peer.result("tasks/result", {"taskId": task_id})["content"][0]["text"] == (
            "Later, Ed!")
    finally:
        peer.close()
