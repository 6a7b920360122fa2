"""Resource subscriptions through ``Server.proxy``: a caller subscribed to the proxy hears
the remote's updates; the proxy is subscribed on the remote, once per URI, exactly while
one of its callers is.

Every pair of eras (the proxy's callers x the proxy's client of the remote), a remote in
this process (observed directly: ``remote.server.subscribers``) and a remote in a real
stdio subprocess (observed through its ``watched`` tool).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpsync import Client, Server
from mcpsync.errors import MCPError
from mcpsync.server.subscribers import ResourceSubscribers
from tests.helpers import wait_until
from tests.serving import RunningServer

from .proxy_remote import Remote
from .test_proxy import ERAS, proxy_of

URI = "mem://readme"
UPDATED = "notifications/resources/updated"


def _follow(client: Client, uri: str = URI) -> Any:
    return client.listen(tools=False, prompts=False, resources=False, resource_uris=[uri])


def _updated(subscription: Any) -> str | None:
    note = subscription.get(timeout=10)
    assert note is not None, "no update arrived"
    assert note.method == UPDATED
    return note.uri  # type: ignore[no-any-return]


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_subscribers_of_the_proxy_hear_the_remote_through_one_upstream_subscription(
        inner: str, outer: str) -> None:
    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version=outer) as first,
          Client.memory(proxy, protocol_version=outer) as second):
        assert first.server_capabilities["resources"]["subscribe"] is True
        one = _follow(first)
        assert one.acknowledged.get("resourceSubscriptions") == [URI]
        # Answered once the remote has the subscription: an update now is not missed.
        assert remote.server.subscribers.count(URI) == 1
        two = _follow(second)
        assert proxy.subscribers.count(URI) == 2
        assert remote.server.subscribers.count(URI) == 1  # one upstream per URI

        first.call_tool("touch", {"uri": URI})
        assert _updated(one) == URI and _updated(two) == URI

        one.close()
        assert remote.server.subscribers.count(URI) == 1  # the second still follows it
        first.call_tool("touch", {"uri": URI})
        assert _updated(two) == URI

        second.close()  # the last subscriber's session ends (or its listen stream closes)
        wait_until(lambda: remote.server.subscribers.count(URI) == 0, timeout=10,
                   message=lambda: f"still {remote.server.subscribers.count(URI)} upstream")
        assert proxy.subscribers.count(URI) == 0


@pytest.mark.parametrize("inner", ERAS)
def test_resources_subscribe_and_unsubscribe_of_a_handshake_caller(inner: str) -> None:
    heard: list[tuple[str, Any]] = []
    arrived = threading.Event()

    def on_notification(method: str, params: Any) -> None:
        heard.append((method, params))
        arrived.set()

    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version="2025-11-25",
                        on_notification=on_notification) as client):
        client.subscribe(URI)
        assert remote.server.subscribers.count(URI) == 1
        client.call_tool("touch", {"uri": URI})
        assert arrived.wait(10)
        assert heard == [(UPDATED, {"uri": URI})]
        client.unsubscribe(URI)
        wait_until(lambda: remote.server.subscribers.count(URI) == 0, timeout=10,
                   message="the upstream subscription was not released")


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_a_listen_of_several_uris(inner: str, outer: str) -> None:
    """A listen stream (or a handshake client's listen) with two URIs: two upstream
    subscriptions, both released when it closes."""
    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version=outer) as client):
        sub = client.listen(tools=False, prompts=False, resources=False,
                            resource_uris=[URI, "mem://items/1"])
        assert (remote.server.subscribers.count(URI),
                remote.server.subscribers.count("mem://items/1")) == (1, 1)
        client.call_tool("touch", {"uri": "mem://items/1"})
        assert _updated(sub) == "mem://items/1"
        sub.close()
        wait_until(lambda: not remote.server.subscribers.uris(), timeout=10,
                   message=lambda: f"still followed: {remote.server.subscribers.uris()}")


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_through_a_stdio_remote(inner: str, outer: str) -> None:
    with (proxy_of("stdio", inner) as (proxy, _),
          Client.memory(proxy, protocol_version=outer) as client):
        def upstream() -> Any:
            return client.call_tool("watched", {"uri": URI}).structured_content["result"]

        assert upstream() == 0
        sub = _follow(client)
        assert upstream() == 1
        client.call_tool("touch", {"uri": URI})
        assert _updated(sub) == URI
        sub.close()
        wait_until(lambda: upstream() == 0, timeout=10,
                   message="the stdio remote still has the subscription")


@pytest.mark.parametrize("outer", ERAS)
def test_callers_of_a_proxy_served_over_http(outer: str) -> None:
    with proxy_of("memory", "2026-07-28") as (proxy, remote):
        app = proxy.wsgi_app(path="/mcp")
        with (RunningServer(app, on_stop=app.close) as running,
              Client.http(running.base + "/mcp", protocol_version=outer,
                          timeout=30) as client):
            sub = _follow(client)
            assert remote.server.subscribers.count(URI) == 1
            client.call_tool("touch", {"uri": URI})
            assert _updated(sub) == URI
            sub.close()
            wait_until(lambda: remote.server.subscribers.count(URI) == 0, timeout=10,
                       message="the upstream subscription was not released")


@pytest.mark.parametrize("inner", ERAS)
def test_subscriptions_are_opened_again_after_the_remote_is_reconnected(inner: str) -> None:
    with (proxy_of("stdio", inner) as (proxy, _),
          Client.memory(proxy, protocol_version="2026-07-28") as client):
        sub = _follow(client)
        with pytest.raises(MCPError):
            client.call_tool("die")
        # The next call finds the remote gone (-32603) or connects again; then the proxy
        # subscribes on the new remote before forwarding the call.
        count: Any = None
        for _ in range(2):
            try:
                count = client.call_tool("watched", {"uri": URI}).structured_content
                break
            except MCPError as exc:
                assert exc.code == -32603
        assert count == {"result": 1}
        client.call_tool("touch", {"uri": URI})
        assert _updated(sub) == URI
        sub.close()


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_a_remote_without_subscriptions_makes_a_proxy_without_them(
        inner: str, outer: str) -> None:
    remote = Remote()
    remote.server.subscribers.offered = False
    assert "subscribe" not in remote.server.capabilities()["resources"]
    proxy = Server.proxy(remote.server, protocol_version=inner, timeout=30,
                         server_options={"request_state_key": b"k"})
    try:
        with Client.memory(proxy, protocol_version=outer) as client:
            assert client.server_capabilities["resources"] == {"listChanged": True}
            sub = _follow(client)
            assert "resourceSubscriptions" not in (sub.acknowledged or {})
            sub.close()
            if outer == "2025-11-25":
                with pytest.raises(MCPError) as refused:
                    client.subscribe(URI)
                assert refused.value.code == -32601
            assert proxy.subscribers.uris() == [] and remote.server.subscribers.uris() == []
    finally:
        proxy.stop()


def test_a_remote_that_refuses_fails_the_callers_subscription() -> None:
    remote = Remote()

    @remote.server.method_handler("resources/subscribe")
    def refuse(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        raise MCPError("no subscriptions today", code=-32600)

    proxy = Server.proxy(remote.server, protocol_version="2025-11-25", timeout=30,
                         server_options={"request_state_key": b"k"})
    try:
        with Client.memory(proxy, protocol_version="2025-11-25") as client:
            with pytest.raises(MCPError) as failed:
                client.subscribe(URI)
            assert failed.value.code == -32603
            assert "no subscriptions today" in failed.value.message
            assert proxy.subscribers.uris() == []  # not recorded: nothing to release
            client.call_tool("touch", {"uri": URI})  # and the proxy still serves
    finally:
        proxy.stop()


def test_the_record_counts_each_subscriber_once_and_a_refusing_watcher_undoes() -> None:
    record = ResourceSubscribers()
    told: list[tuple[str, int]] = []
    record.watchers.append(lambda uri: told.append((uri, record.count(uri))))
    a, b = object(), object()
    record.add(a, ["x", "x", "y"])
    record.add(b, ["x"])
    assert (record.count("x"), record.count("y"), record.has(a, "y")) == (2, 1, True)
    record.remove(a, ["x", "nope"])
    record.drop(b)
    assert record.uris() == ["y"]
    assert told == [("x", 1), ("y", 1), ("x", 2), ("x", 1), ("x", 0)]

    def refuse(uri: str) -> None:
        if uri == "z":
            raise MCPError("no")

    record.watchers.append(refuse)
    with pytest.raises(MCPError):
        record.add(b, ["w", "z"])
    assert record.uris() == ["y"] and not record.has(b, "w")


@pytest.mark.parametrize("outer", ERAS)
def test_a_subscription_to_a_mounted_proxy_reaches_its_remote(outer: str) -> None:
    """A front door mounting a proxy: the front door's subscriber of ``mem://r/readme``
    makes the proxy subscribe to ``mem://readme`` on the remote, until it goes."""
    front = Server("front", request_state_key=b"k")
    with proxy_of("memory", "2026-07-28") as (proxy, remote):
        front.mount(proxy, prefix="r")
        try:
            with Client.memory(front, protocol_version=outer) as client:
                sub = _follow(client, "mem://r/readme")
                assert remote.server.subscribers.count(URI) == 1
                client.call_tool("r_touch", {"uri": URI})
                assert _updated(sub) == "mem://r/readme"
                sub.close()
                wait_until(lambda: remote.server.subscribers.count(URI) == 0, timeout=10,
                           message="the remote subscription was not released")
                assert proxy.subscribers.uris() == []
        finally:
            front.stop()


@pytest.mark.parametrize("inner", ERAS)
def test_a_stopped_proxy_releases_the_remote_and_follows_again_when_it_reconnects(
        inner: str) -> None:
    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version="2025-11-25") as client):
        sub = _follow(client)
        proxy.stop()  # its shutdown: the remote hears the unsubscribe, the link closes
        wait_until(lambda: remote.server.subscribers.count(URI) == 0, timeout=10,
                   message="the stopped proxy still holds the remote subscription")
        # The caller is still subscribed: the next request connects, and follows it again.
        assert client.call_tool("watched", {"uri": URI}).structured_content == {"result": 1}
        client.call_tool("touch", {"uri": URI})
        assert _updated(sub) == URI
        sub.close()


@pytest.mark.parametrize("inner", ["2026-07-28"])
def test_a_slow_remote_subscription_does_not_hold_up_another_uri(inner: str) -> None:
    """Opening a subscription on the remote is a network call: it used to run under the
    proxy's one lock, so a remote slow to take one URI held up every other caller's
    subscribe (and unsubscribe) on the proxy. (A handshake-era remote still takes them one
    at a time: mcpsync's client orders its resources/subscribe and unsubscribe calls.)"""
    slow = "mem://items/slow"
    entered, release = threading.Event(), threading.Event()

    def slow_remote(uri: str) -> None:  # the remote's own subscribers watcher
        if uri == slow and not release.is_set():
            entered.set()
            assert release.wait(20), "never released"

    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version="2025-11-25") as first,
          Client.memory(proxy, protocol_version="2025-11-25") as second):
        remote.server.subscribers.watchers.append(slow_remote)
        outcome: list[object] = []
        waiting = threading.Thread(target=lambda: outcome.append(first.subscribe(slow)),
                                   name="test-slow-subscribe")
        waiting.start()
        try:
            assert entered.wait(10), "the slow subscription never reached the remote"
            second.subscribe(URI, timeout=5)  # not held up by the slow one
            assert remote.server.subscribers.count(URI) == 1
        finally:
            release.set()
            waiting.join(20)
        assert not waiting.is_alive() and outcome == [None]
        assert proxy.subscribers.count(slow) == 1
