"""Tasks v2 (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663) on the server.

Raw JSON-RPC against ``tests.tasks.task_server`` on every transport (memory, a stdio
subprocess, HTTP on a real socket) and in both eras (2026-07-28 with the extension in each
request's ``_meta``; the handshake era with it in ``initialize``). What the server sends is
validated against the extension's schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.serving import RunningServer
from tests.spec import validate
from tests.tasks.peers import EXT, PLAIN_CAPS, WAIT, Peer

COMBOS = [(kind, era) for kind in ("memory", "stdio", "http") for era in ("modern", "legacy")]
# The tests only a 2026-07-28 session can run take only these (no id that always skips).
MODERN_ONLY = pytest.mark.parametrize(
    "peer", [c for c in COMBOS if c[1] == "modern"], indirect=True,
    ids=[f"{k}-{e}" for k, e in COMBOS if e == "modern"])


@pytest.fixture(scope="module")
def http() -> Iterator[RunningServer]:
    from tests.tasks.task_server import server

    with RunningServer(server.wsgi_app()) as running:
        yield running


@pytest.fixture(scope="module", params=COMBOS, ids=[f"{k}-{e}" for k, e in COMBOS])
def peer(request: pytest.FixtureRequest, http: RunningServer) -> Iterator[Peer]:
    kind, era = request.param
    client = Peer(kind, era, http=http)
    yield client
    client.close()


def call(peer: Peer, tool: str, **arguments: Any) -> dict[str, Any]:
    return peer.result("tools/call", {"name": tool, "arguments": arguments})


def get(peer: Peer, task_id: str) -> dict[str, Any]:
    task = peer.result("tasks/get", {"taskId": task_id})
    validate("ext-tasks", "DetailedTask", {k: v for k, v in task.items()
                                           if k not in ("resultType", "_meta")})
    return task


def settle(peer: Peer, task_id: str, *statuses: str) -> dict[str, Any]:
    """Poll tasks/get (as a client does) until the task reaches one of ``statuses``."""
    wanted = statuses or ("completed", "failed", "cancelled")
    seen: dict[str, Any] = {}

    def reached() -> bool:
        seen.update(get(peer, task_id))
        return seen["status"] in wanted

    wait_until(reached, timeout=WAIT, interval=0.05,
               message=lambda: f"task {task_id} stuck at {seen.get('status')}")
    return seen


def created(result: dict[str, Any]) -> str:
    assert result["resultType"] == "task", result
    assert "task" not in result and "result" not in result and "requestState" not in result
    validate("ext-tasks", "CreateTaskResult", result)
    assert isinstance(result["ttlMs"], int) and isinstance(result["pollIntervalMs"], int)
    assert len(result["taskId"]) >= 32  # 192 random bits, URL-safe
    task_id: str = result["taskId"]
    return task_id


def test_discover_or_initialize_advertises_the_extension(peer: Peer) -> None:
    caps = (peer.result("server/discover")["capabilities"] if peer.era == "modern"
            else peer.init_result["capabilities"])
    assert caps["extensions"] == {EXT: {}}
    if peer.era == "modern":
        assert "tasks" not in caps  # the v1 slot belongs to 2025-11-25 only


def test_tools_list_says_which_tools_run_as_tasks(peer: Peer) -> None:
    tools = {t["name"]: t for t in peer.result("tools/list")["tools"]}
    assert "execution" not in tools["plain"]
    assert tools["slow"]["execution"] == {"taskSupport": "optional"}
    assert tools["must_task"]["execution"] == {"taskSupport": "required"}


def test_a_plain_tool_is_never_a_task(peer: Peer) -> None:
    result = peer.result("tools/call", {"name": "plain", "arguments": {"name": "x"},
                                        "task": {"ttl": 1000}})
    assert "taskId" not in result and result.get("resultType", "complete") == "complete"
    assert result["content"][0]["text"] == "Hello, x!"


def test_lifecycle_create_get_complete(peer: Peer) -> None:
    task_id = created(call(peer, "slow", seconds=0.3))
    first = get(peer, task_id)  # written before CreateTaskResult was sent
    assert first["taskId"] == task_id and first["resultType"] == "complete"
    done = settle(peer, task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "slept 0.3"
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})
    assert done["statusMessage"] == "half way"  # ctx.progress's message


def test_tool_error_is_completed_with_is_error(peer: Peer) -> None:
    done = settle(peer, created(call(peer, "tool_error")))
    assert done["status"] == "completed" and done["result"]["isError"] is True


def test_protocol_error_is_failed_with_the_error(peer: Peer) -> None:
    done = settle(peer, created(call(peer, "crash")))
    assert done["status"] == "failed" and "result" not in done
    assert done["error"] == {"code": -32602, "message": "no such widget", "data": {"widget": 7}}


def test_cancel_acks_and_the_task_settles_cancelled(peer: Peer) -> None:
    task_id = created(call(peer, "slow", seconds=60))
    ack = peer.result("tasks/cancel", {"taskId": task_id})
    assert ack.get("resultType") == "complete"
    assert not {"taskId", "status", "result", "error"} & set(ack)
    assert settle(peer, task_id)["status"] == "cancelled"
    again = peer.result("tasks/cancel", {"taskId": task_id})  # idempotent on terminal
    assert again.get("resultType") == "complete"


def test_elicit_becomes_input_requests_answered_by_tasks_update(peer: Peer) -> None:
    task_id = created(call(peer, "ask_name"))
    waiting = settle(peer, task_id, "input_required")
    assert waiting["status"] == "input_required"
    [(key, question)] = waiting["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    ack = peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"name": "Ada"}}, "bogus": {"x": 1}}})
    assert ack.get("resultType") == "complete" and "status" not in ack
    done = settle(peer, task_id)
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"


def test_two_questions_may_be_answered_one_at_a_time(peer: Peer) -> None:
    task_id = created(call(peer, "ask_two"))

    def both_asked() -> bool:
        return len(get(peer, task_id).get("inputRequests", {})) == 2

    wait_until(both_asked, timeout=WAIT, interval=0.05)
    first, second = get(peer, task_id)["inputRequests"]
    peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
        first: {"action": "accept", "content": {"name": "Bo"}}}})
    partial = get(peer, task_id)
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == [second]
    peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
        second: {"action": "accept", "content": {"ok": True}}}})
    assert settle(peer, task_id)["result"]["content"][0]["text"] == "Bo/True"


def test_sampling_and_roots_in_a_task(peer: Peer) -> None:
    task_id = created(call(peer, "ask_model"))
    waiting = settle(peer, task_id, "input_required")
    [(key, question)] = waiting["inputRequests"].items()
    assert question["method"] == "sampling/createMessage"
    peer.result("tasks/update", {"taskId": task_id, "inputResponses": {key: {
        "role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}}})

    def roots_asked() -> bool:
        asked = get(peer, task_id).get("inputRequests", {})
        return any(q["method"] == "roots/list" for q in asked.values())

    wait_until(roots_asked, timeout=WAIT, interval=0.05)
    [key2] = get(peer, task_id)["inputRequests"]
    peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
        key2: {"roots": [{"uri": "file:///a"}]}}})
    assert settle(peer, task_id)["result"]["content"][0]["text"] == "hi (1 roots)"


def test_unknown_task_is_invalid_params(peer: Peer) -> None:
    for method in ("tasks/get", "tasks/cancel"):
        assert peer.error(method, {"taskId": "no-such-task"})["code"] == -32602
    error = peer.error("tasks/update", {"taskId": "no-such-task", "inputResponses": {}})
    assert error["code"] == -32602


def test_bad_params_are_invalid_params(peer: Peer) -> None:
    # Over 2026-07-28 HTTP no Mcp-Name can match a non-string taskId: -32020 comes first.
    expected = -32020 if (peer.kind, peer.era) == ("http", "modern") else -32602
    assert peer.error("tasks/get", {"taskId": 5})["code"] == expected
    task_id = created(call(peer, "slow", seconds=0))
    assert peer.error("tasks/update", {"taskId": task_id,
                                       "inputResponses": []})["code"] == -32602


@MODERN_ONLY  # a 2025-11-25 session also speaks v1: see test_server_v1.py
def test_v1_methods_do_not_exist_on_v2(peer: Peer) -> None:
    assert peer.error("tasks/result", {"taskId": "x"})["code"] == -32601
    assert peer.error("tasks/list", {})["code"] == -32601


@MODERN_ONLY  # handshake era: the question is a real request (test_server_v1.py)
def test_defer_task_asks_first_then_runs_as_a_task(peer: Peer) -> None:
    first = call(peer, "ask_then_task")
    assert first["resultType"] == "input_required" and "taskId" not in first
    [key] = first["inputRequests"]
    second = peer.result("tools/call", {
        "name": "ask_then_task", "arguments": {}, "requestState": first["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"name": "Cy"}}}})
    task_id = created(second)
    assert settle(peer, task_id)["result"]["content"][0]["text"] == "Later, Cy!"


# -- without the extension ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "stdio", "http"])
def test_without_the_extension(kind: str, http: RunningServer) -> None:
    plain = Peer(kind, "modern", PLAIN_CAPS, http=http)
    try:
        result = call(plain, "slow", seconds=0)  # optional: runs as a plain call
        assert result["resultType"] == "complete" and "taskId" not in result
        error = plain.error("tools/call", {"name": "must_task", "arguments": {}})
        assert error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        for method in ("tasks/get", "tasks/cancel"):
            assert plain.error(method, {"taskId": "t"})["code"] == -32021
        # ... and a per-request opt-in is honoured.
        opted = plain.result("tools/call", {"name": "slow", "arguments": {}}, meta={
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}})
        assert opted["resultType"] == "task"
    finally:
        plain.close()


def test_another_session_cannot_see_a_task(http: RunningServer) -> None:
    for kind in ("memory", "http"):
        alice, mallory = Peer(kind, "legacy", http=http), Peer(kind, "legacy", http=http)
        try:
            task_id = created(call(alice, "slow", seconds=30))
            for method in ("tasks/get", "tasks/cancel"):
                assert mallory.error(method, {"taskId": task_id})["code"] == -32602
            assert get(alice, task_id)["status"] == "working"  # untouched
            alice.result("tasks/cancel", {"taskId": task_id})
        finally:
            alice.close()
            mallory.close()


def test_mcp_name_must_match_the_task_id(http: RunningServer) -> None:
    peer = Peer("http", "modern", http=http)
    task_id = created(call(peer, "slow", seconds=30))
    try:
        reply = peer.request("tasks/get", {"taskId": task_id}, headers={"Mcp-Name": "other"})
        assert reply["error"]["code"] == -32020
        assert peer.result("tasks/get", {"taskId": task_id})["taskId"] == task_id
    finally:
        peer.result("tasks/cancel", {"taskId": task_id})
