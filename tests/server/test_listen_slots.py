"""Open ``subscriptions/listen`` streams never take handler slots (issue #11, defect 3).

A listen parks for as long as the client keeps it. With each one holding a slot of
``max_handlers``, that many listens left every tool call, prompt, read and
completion of every client waiting. Listens now give their slot back and have their own
server-wide bound, ``max_subscriptions``, past which a new one is refused at once.

The same scenario runs over memory and stdio here, and over HTTP in
``tests/http/test_listen_slots_http.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mcpsync import Client, MCPError, ServerLimits
from tests.helpers import WAIT
from tests.server import listen_slots_server
from tests.server.listen_slots_server import MAX_SUBSCRIPTIONS, SLOTS

MODERN = "2026-07-28"
ROOT = Path(__file__).resolve().parents[2]


def exercise(connect: Callable[[], Client]) -> None:
    assert MAX_SUBSCRIPTIONS > SLOTS
    with connect() as client:
        subs = [client.listen(tools=True, prompts=False, resources=False, timeout=WAIT)
                for _ in range(MAX_SUBSCRIPTIONS)]
        # Every slot would be taken twice over: the other requests are served anyway.
        for _ in range(SLOTS + 1):
            assert client.call_tool("work", timeout=WAIT).text == "worked"
            assert client.get_prompt("hello", timeout=WAIT).messages
            assert client.read_resource("notes://a", timeout=WAIT).contents[0].text == "note a"
            assert client.complete("notes://{name}", "name", "a",
                                   timeout=WAIT).values == ["a1"]
        # One listen more than max_subscriptions: a clear error at once.
        with pytest.raises(MCPError) as caught:
            client.listen(tools=True, timeout=WAIT)
        assert caught.value.code == -32603
        assert "max_subscriptions" in caught.value.message
        assert caught.value.data == {"maxSubscriptions": MAX_SUBSCRIPTIONS}
        # A closed listen gives its permit back.
        subs.pop().close()
        assert client.call_tool("wait_listens", {"at_most": MAX_SUBSCRIPTIONS - 1},
                                timeout=WAIT).structured_content == {"result": True}
        subs.append(client.listen(tools=True, prompts=False, resources=False, timeout=WAIT))
        # The listens still deliver.
        client.call_tool("grow", {"name": "extra"}, timeout=WAIT)
        for sub in subs:
            note = sub.get(WAIT)
            assert note is not None and note.method == "notifications/tools/list_changed"
        for sub in subs:
            sub.close()
        assert client.call_tool("wait_listens", {"at_most": 0},
                                timeout=WAIT).structured_content == {"result": True}


def test_memory():
    server = listen_slots_server.make_server()
    exercise(lambda: Client.memory(server, protocol_version=MODERN))
    assert len(server.listeners) == 0


def test_memory_listens_of_many_sessions_share_one_bound():
    server = listen_slots_server.make_server()
    clients = [Client.memory(server, protocol_version=MODERN) for _ in range(2)]
    try:
        subs = [clients[i % 2].listen(tools=True, timeout=WAIT)
                for i in range(MAX_SUBSCRIPTIONS)]
        for client in clients:
            assert client.call_tool("work", timeout=WAIT).text == "worked"
            with pytest.raises(MCPError, match="max_subscriptions"):
                client.listen(tools=True, timeout=WAIT)
        for sub in subs:
            sub.close()
    finally:
        for client in clients:
            client.close()
    assert server.listeners.wait_ended(timeout=WAIT)


def test_stdio():
    command = [sys.executable, "-m", "tests.server.listen_slots_server"]
    exercise(lambda: Client.stdio(command, cwd=ROOT, protocol_version=MODERN))


def test_max_subscriptions_zero_refuses_every_listen():
    from mcpsync import Server

    server = Server("no-listens", limits=ServerLimits(max_subscriptions=0))
    with Client.memory(server, protocol_version=MODERN) as client:
        with pytest.raises(MCPError, match="max_subscriptions"):
            client.listen(timeout=WAIT)
        client.list_tools()


def test_a_slow_listen_keeps_a_bounded_backlog_of_updates():
    # A client that does not read while the server announces many distinct sub-resources:
    # what waits for it is bounded; past the bound the updates fold into the subscribed URI.
    from mcpsync.server.listen import MAX_PENDING, Listener

    listener = Listener("s", {"resourceSubscriptions": ["notes://a"], "toolsListChanged": True},
                        owner=object())
    registry_like = [("uri", f"notes://a/{n}") for n in range(MAX_PENDING * 4)]
    for key in registry_like:
        listener.post(key, "notifications/resources/updated", {"uri": key[1]})
    listener.post(("list", "tools"), "notifications/tools/list_changed", None)
    pending = listener.take()
    assert len(pending) <= MAX_PENDING + 2
    uris = [params["uri"] for method, params in pending if params]
    assert uris[:MAX_PENDING] == [f"notes://a/{n}" for n in range(MAX_PENDING)]
    assert "notes://a" in uris  # the rest, folded into what was subscribed
    assert ("notifications/tools/list_changed", None) in pending
