"""``Client.listen``: subscriptions in both eras over the in-memory transport."""

from __future__ import annotations

import queue
import threading

import pytest

from mcpsync import Client, MCPError, Server
from mcpsync.client.listen import SubscriptionNotification
from tests.helpers import WAIT

MODERN = "2026-07-28"


def make_server() -> Server:
    server = Server("listen-client", request_state_key="k")

    @server.resource("notes://a")
    def note_a() -> str:
        return "a"

    return server


def test_iterate_and_demultiplex_two_subscriptions():
    server = make_server()
    others: list[tuple[str, dict]] = []
    with Client.memory(server, protocol_version=MODERN,
                       on_notification=lambda m, p: others.append((m, p))) as client:
        tools = client.listen(prompts=False, resources=False)
        notes = client.listen(tools=False, prompts=False, resources=False,
                              resource_uris=["notes://a"])
        assert tools.acknowledged == {"toolsListChanged": True}
        assert notes.acknowledged == {"resourceSubscriptions": ["notes://a"]}
        assert tools.id != notes.id
        server.add_tool(lambda: 1, name="one")
        server.notify_resource_updated("notes://a")
        first = next(tools)
        assert first.method == "notifications/tools/list_changed"
        assert first.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == tools.id
        assert notes.get(WAIT).uri == "notes://a"
        assert tools.get(0.05) is None and notes.get(0.05) is None
        tools.close()
        assert server.listeners.wait_ended(timeout=WAIT, at_most=1)
        assert not tools.active and list(tools) == []
        assert notes.active
        notes.close()
        assert server.listeners.wait_ended(timeout=WAIT)
    assert others == []  # tagged notifications belong to their subscription only


def test_callbacks_run_on_their_own_thread_and_may_call_the_client():
    server = make_server()
    got: queue.Queue[tuple[SubscriptionNotification, list[str]]] = queue.Queue()
    with Client.memory(server, protocol_version=MODERN) as client:

        def refresh(note: SubscriptionNotification) -> None:
            got.put((note, [t.name for t in client.list_tools()]))

        with client.listen(on_notification=refresh):
            server.add_tool(lambda: 1, name="fresh")
            note, names = got.get(timeout=WAIT)
            assert note.method == "notifications/tools/list_changed" and names == ["fresh"]


def test_server_end_and_client_close_end_the_subscription():
    server = make_server()
    client = Client.memory(server, protocol_version=MODERN)
    sub = client.listen()
    assert server.end_subscriptions(timeout=WAIT)
    assert sub.wait_ended(WAIT) and sub.ended_by_server and sub.error is None
    again = client.listen()
    client.close()
    assert again.wait_ended(WAIT) and not again.ended_by_server
    assert again.error is not None


def test_a_server_without_listen_raises_its_error():
    server = make_server()
    server.methods.remove_request("subscriptions/listen")
    with Client.memory(server, protocol_version=MODERN) as client:
        assert client.server_capabilities["tools"] == {}  # not declared without it
        with pytest.raises(MCPError) as info:
            client.listen()
        assert info.value.code == -32601


def test_handshake_era_maps_onto_session_notifications_and_subscribe():
    server = make_server()
    with Client.memory(server) as client:  # 2025-11-25
        sub = client.listen(prompts=False, resource_uris=["notes://a"])
        assert sub.id is None
        assert sub.acknowledged == {"toolsListChanged": True, "resourcesListChanged": True,
                                    "resourceSubscriptions": ["notes://a"]}
        (session,) = server.sessions()
        assert server.subscribers.has(session, "notes://a")
        server.add_tool(lambda: 1, name="one")
        assert sub.get(WAIT).method == "notifications/tools/list_changed"
        server.notify_resource_updated("notes://a")
        assert sub.get(WAIT).uri == "notes://a"
        sub.close()
        assert not server.subscribers.has(session, "notes://a")


def test_an_unread_subscription_holds_a_bounded_backlog(caplog):
    # A subscription nobody reads used to queue every notification for as long as it lived.
    from mcpsync.client.listen import MAX_BACKLOG, Subscription

    sub = Subscription(7, {}, lambda: None, None, "t")
    for n in range(MAX_BACKLOG + 500):
        sub._deliver("notifications/resources/updated", {"uri": f"notes://{n}"})
    assert sub.dropped == 500
    assert sum(1 for r in caplog.records if "dropping new" in r.getMessage()) == 1
    assert sub.get(0).uri == "notes://0"  # the oldest are kept, in order
    sub._deliver("notifications/resources/updated", {"uri": "notes://late"})  # room again
    sub._finish()
    rest = list(sub)
    assert len(rest) == MAX_BACKLOG and rest[-1].uri == "notes://late"


def test_threads_sharing_a_client_never_lose_a_resource_subscription():
    # Handshake era: one thread closing the last listen on a URI (unsubscribe) and another
    # opening one (subscribe) used to send both at once; a server that ran the unsubscribe
    # last left the session unsubscribed while the client counted it subscribed, so that
    # listen, and every later one for the URI, missed every update. The server here holds
    # an unsubscribe until a subscribe has been applied (at most 2 s) to force that order.
    server = make_server()
    holding, subscribed = threading.Event(), threading.Event()

    @server.request_scope
    def hold_unsubscribe(ctx):
        if ctx.method == "resources/unsubscribe":
            holding.set()
            subscribed.wait(2.0)
        yield
        if ctx.method == "resources/subscribe":
            subscribed.set()

    with Client.memory(server, protocol_version="2025-11-25") as client:
        first = client.listen(tools=False, prompts=False, resources=False,
                              resource_uris=["notes://a"])
        subscribed.clear()
        closing = threading.Thread(target=first.close, name="test-closer")
        closing.start()
        assert holding.wait(WAIT)  # the unsubscribe is on the server, not yet applied
        with client.listen(tools=False, prompts=False, resources=False,
                           resource_uris=["notes://a"]) as second:
            closing.join(WAIT)
            server.notify_resource_updated("notes://a")
            assert second.get(WAIT) is not None, "the subscription was lost"
