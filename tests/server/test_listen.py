"""``subscriptions/listen`` (2026-07-28) on the server: acknowledgement, fan-out, endings."""

from __future__ import annotations

import queue
import sys
import threading
from pathlib import Path

import pytest

from mcpsync import Client, HandlerContext, Server
from mcpsync.protocol.jsonrpc import Notification, Request
from mcpsync.transports.memory import memory_pair
from tests.helpers import WAIT
from tests.spec import validate, validate_message

MODERN = "2026-07-28"
SUB = "io.modelcontextprotocol/subscriptionId"
ROOT = Path(__file__).resolve().parents[2]


def envelope():
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}


def make_server() -> Server:
    server = Server("listen", request_state_key="k")

    @server.tool()
    def work(ctx: HandlerContext) -> str:
        ctx.progress(1, total=1)
        ctx.log("info", "working")
        return "done"

    @server.prompt()
    def hello() -> str:
        return "hi"

    @server.resource("notes://a")
    def note_a() -> str:  # resources are declared (and subscribable) once there is one
        return "a"

    return server


class Peer:
    """A raw client end; every message it receives is validated against the schema."""

    def __init__(self, server: Server) -> None:
        self.end, server_end = memory_pair()
        self.session = server.connect(server_end)
        self.inbox: queue.Queue[dict] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while (message := self.end.receive()) is not None:
            wire = message.to_wire()
            validate_message(MODERN, wire)
            self.inbox.put(wire)

    def send(self, request_id, method, params=None):
        params = dict(params or {})
        params["_meta"] = {**envelope(), **params.get("_meta", {})}
        self.end.send(Request(request_id, method, params))

    def next(self) -> dict:
        return self.inbox.get(timeout=WAIT)

    def nothing_pending(self) -> bool:
        return self.inbox.empty()

    def close(self) -> None:
        self.session.close()
        self.end.close()


@pytest.fixture
def server():
    return make_server()


@pytest.fixture
def peer(server):
    p = Peer(server)
    yield p
    p.close()


def listen(peer, request_id, **wanted):
    peer.send(request_id, "subscriptions/listen", {"notifications": wanted})
    ack = peer.next()
    validate(MODERN, "SubscriptionsAcknowledgedNotification", ack)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"][SUB] == request_id
    return ack["params"]["notifications"]


def test_ack_first_then_only_the_kinds_asked_for(server, peer):
    granted = listen(peer, "s1", toolsListChanged=True, resourceSubscriptions=["notes://a"])
    assert granted == {"toolsListChanged": True, "resourceSubscriptions": ["notes://a"]}
    server.prompts.remove("hello")           # not asked for: nothing
    server.notify_resource_updated("notes://b")  # not covered: nothing
    server.add_tool(lambda: 1, name="one")
    note = peer.next()
    validate(MODERN, "ToolListChangedNotification", note)
    assert note["method"] == "notifications/tools/list_changed"
    assert note["params"]["_meta"] == {SUB: "s1"}
    server.notify_resource_updated("notes://a/child")  # a sub-resource is covered
    note = peer.next()
    validate(MODERN, "ResourceUpdatedNotification", note)
    assert note["params"] == {"uri": "notes://a/child", "_meta": {SUB: "s1"}}
    assert peer.nothing_pending()


def test_progress_and_logs_stay_on_their_request(server, peer):
    listen(peer, 1, toolsListChanged=True)
    peer.send(2, "tools/call", {"name": "work", "_meta": {
        "progressToken": "p", "io.modelcontextprotocol/logLevel": "info"}})
    seen = []
    while True:
        message = peer.next()
        seen.append(message)
        if message.get("id") == 2:
            break
    for message in seen:
        assert SUB not in (message.get("params") or {}).get("_meta", {})
    assert {m.get("method") for m in seen[:-1]} == {"notifications/progress",
                                                    "notifications/message"}


def test_several_listens_each_tagged_and_cancel_ends_one_silently(server, peer):
    listen(peer, 10, toolsListChanged=True)
    listen(peer, 11, toolsListChanged=True, promptsListChanged=True)
    assert len(server.listeners) == 2
    server.add_tool(lambda: 1, name="one")
    tags = sorted(peer.next()["params"]["_meta"][SUB] for _ in range(2))
    assert tags == [10, 11]
    peer.end.send(Notification("notifications/cancelled", {"requestId": 10}))
    # The handler leaves the registry (bounded wait); no response for 10 is sent.
    assert server.listeners.wait_ended(timeout=WAIT, at_most=1)
    server.prompts.remove("hello")
    note = peer.next()
    assert note["method"] == "notifications/prompts/list_changed"
    assert note["params"]["_meta"][SUB] == 11
    assert peer.nothing_pending()


def test_server_ends_subscriptions_gracefully(server, peer):
    listen(peer, 7, resourcesListChanged=True)
    assert server.end_subscriptions(timeout=WAIT)
    reply = peer.next()
    assert reply["id"] == 7
    validate(MODERN, "SubscriptionsListenResultResponse", reply)
    assert reply["result"]["resultType"] == "complete"
    assert reply["result"]["_meta"][SUB] == 7
    assert len(server.listeners) == 0


def test_session_close_ends_them_with_a_result(server):
    p = Peer(server)
    try:
        listen(p, 3, toolsListChanged=True)
        p.session.close()
        reply = p.next()
        assert reply["id"] == 3 and reply["result"]["_meta"][SUB] == 3
    finally:
        p.end.close()


@pytest.mark.parametrize("wanted", [None, {"toolsListChanged": "yes"},
                                    {"resourceSubscriptions": "notes://a"}])
def test_bad_filters_are_invalid_params(peer, wanted):
    peer.send(1, "subscriptions/listen", {} if wanted is None else {"notifications": wanted})
    assert peer.next()["error"]["code"] == -32602


def test_discover_declares_what_listen_serves(peer):
    peer.send(1, "server/discover")
    caps = peer.next()["result"]["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}


def test_not_in_the_handshake_era(server):
    with Client.memory(server) as client:
        from mcpsync import MethodNotFoundError

        with pytest.raises(MethodNotFoundError):
            client.request("subscriptions/listen", {"notifications": {}})


def test_over_stdio():
    script = ROOT / "tests" / "server" / "listen_server.py"
    with Client.stdio([sys.executable, str(script)], env={"PYTHONPATH": str(ROOT)},
                      protocol_version=MODERN, timeout=WAIT) as client:
        with client.listen(prompts=False, resource_uris=["notes://x"]) as sub:
            assert sub.acknowledged == {"toolsListChanged": True, "resourcesListChanged": True,
                                        "resourceSubscriptions": ["notes://x"]}
            client.call_tool("grow", {"name": "extra"})
            note = sub.get(WAIT)
            assert note is not None and note.method == "notifications/tools/list_changed"
            client.call_tool("touch", {"uri": "notes://x"})
            note = sub.get(WAIT)
            assert note is not None and note.uri == "notes://x"
            assert "extra" in {t.name for t in client.list_tools()}
        assert not sub.active and not sub.ended_by_server
        # The server is still fine after the cancellation.
        with client.listen() as second:
            client.call_tool("stop_listening")
            assert second.wait_ended(WAIT) and second.ended_by_server
            assert list(second) == []
