"""Task status notifications of the tasks extension: ``notifications/tasks`` on a
``subscriptions/listen`` stream that follows the task (``notifications.taskIds``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from tests.helpers import wait_until
from tests.http.raw import BOTH, SseReader, envelope
from tests.serving import RunningServer
from tests.spec import validate
from tests.tasks.peers import V2_CAPS, WAIT, Peer
from tests.tasks.task_server import make_server

SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


def statuses(notes: list[dict[str, Any]], task_id: str) -> list[str]:
    return [n["params"]["status"] for n in notes if n["method"] == "notifications/tasks"
            and n["params"]["taskId"] == task_id]


@pytest.mark.parametrize("kind", ["memory", "stdio"])
def test_a_listen_following_a_task_hears_each_status(kind: str) -> None:
    peer = Peer(kind, "modern")
    try:
        created = peer.result("tools/call", {"name": "ask_name", "arguments": {}})
        task_id = created["taskId"]
        listen_id = peer.send("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
        wait_until(lambda: any(n["method"] == "notifications/subscriptions/acknowledged"
                               for n in peer.notifications), timeout=WAIT)
        ack = next(n for n in peer.notifications
                   if n["method"] == "notifications/subscriptions/acknowledged")
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}

        def asked() -> list[str]:
            return statuses(peer.notifications, task_id)

        def detailed() -> dict[str, Any]:
            task: dict[str, Any] = peer.result("tasks/get", {"taskId": task_id})
            return task

        wait_until(lambda: detailed()["status"] == "input_required", timeout=WAIT)
        [key] = detailed()["inputRequests"]
        peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
            key: {"action": "accept", "content": {"name": "Flo"}}}})
        wait_until(lambda: "completed" in asked(), timeout=WAIT,
                   message=lambda: f"heard {asked()}")
        # input_required may come before the listen does; the end is always heard.
        assert asked()[-1] == "completed"
        assert set(asked()) <= {"input_required", "working", "completed"}
        for note in peer.notifications:
            if note["method"] == "notifications/tasks":
                assert note["params"]["_meta"][SUBSCRIPTION] == listen_id
                validate("ext-tasks", "TaskStatusNotification", note)
        final = [n for n in peer.notifications if n["method"] == "notifications/tasks"][-1]
        assert final["params"]["result"]["content"][0]["text"] == "Hello, Flo!"
        peer.notify("notifications/cancelled", {"requestId": listen_id})
    finally:
        peer.close()


def test_another_principal_neither_gets_nor_hears_a_task() -> None:
    """2026-07-28: a task belongs to the authenticated principal that created it."""
    server = make_server()

    @server.request_scope
    def authenticate(ctx: Any) -> Any:  # a stand-in for an auth layer
        ctx.transport.auth = {"subject": ctx.meta.get("test/user")}
        yield

    alice, bob = Peer("memory", "modern", server=server), Peer("memory", "modern",
                                                               server=server)
    try:
        task_id = alice.result("tools/call", {"name": "slow", "arguments": {"seconds": 0.3}},
                               meta={"test/user": "alice"})["taskId"]
        error = bob.error("tasks/get", {"taskId": task_id}, meta={"test/user": "bob"})
        assert error["code"] == -32602
        assert bob.error("tasks/cancel", {"taskId": task_id},
                         meta={"test/user": "bob"})["code"] == -32602
        hers = alice.send("subscriptions/listen", {"notifications": {"taskIds": [task_id]},
                                                  "_meta": {"test/user": "alice"}})
        his = bob.send("subscriptions/listen", {"notifications": {"taskIds": [task_id]},
                                               "_meta": {"test/user": "bob"}})
        wait_until(lambda: "completed" in statuses(alice.notifications, task_id),
                   timeout=WAIT)
        assert statuses(bob.notifications, task_id) == []
        assert alice.result("tasks/get", {"taskId": task_id},
                            meta={"test/user": "alice"})["status"] == "completed"
        alice.notify("notifications/cancelled", {"requestId": hers})
        bob.notify("notifications/cancelled", {"requestId": his})
    finally:
        alice.close()
        bob.close()
        server.close_tasks()


def test_over_http_the_listen_stream_carries_the_statuses() -> None:
    server = make_server()
    with RunningServer(server.wsgi_app()) as http:
        peer = Peer("http", "modern", http=http)
        task_id = peer.result("tools/call", {"name": "slow",
                                             "arguments": {"seconds": 0.5}})["taskId"]
        body = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
            "notifications": {"taskIds": [task_id]}, "_meta": envelope(capabilities=V2_CAPS)}}
        response = requests.post(http.base + "/mcp", data=json.dumps(body), stream=True,
                                 timeout=WAIT, headers={
                                     "Content-Type": "application/json", "Accept": BOTH,
                                     "MCP-Protocol-Version": "2026-07-28",
                                     "Mcp-Method": "subscriptions/listen"})
        try:
            reader = SseReader(response)
            heard: list[str] = []
            while "completed" not in heard:
                event = reader.next_event()
                assert event is not None, heard
                message = json.loads(event["data"])
                if message.get("method") == "notifications/tasks":
                    heard.append(message["params"]["status"])
            assert heard[-1] == "completed"
        finally:
            response.close()
            server.end_subscriptions()
            server.close_tasks()
