"""Handshake-era sessions served by several workers with no sticky routing (issue #17).

Two (or three) workers share a session store, an event store and a bus (see
``relay_cluster.py``); the client's requests are routed to them by a rule. Every test here
fails without the relay (``MCPSYNC_TEST_NO_RELAY=1``): the answer, the cancellation, the
GET stream's messages, the DELETE would stay on the worker that received them.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcpsync import Client, ElicitResult, HostHandlers
from mcpsync.errors import RequestTimeoutError
from mcpsync.types.common import LogMessage
from tests.helpers import wait_until

from .raw import LEGACY, WAIT, LegacySession, SseReader, answer_of
from .relay_cluster import FRONT, Cluster, balanced_session, by_kind, round_robin


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster() as running:
        yield running


def _messages(reader: SseReader, count: int) -> list[tuple[str, dict[str, Any]]]:
    """The next ``count`` JSON-RPC messages of a stream, with their event ids."""
    out: list[tuple[str, dict[str, Any]]] = []
    while len(out) < count:
        event = reader.next_event()
        assert event is not None, f"the stream ended after {out}"
        if event.get("data") and event["data"].strip():
            out.append((event["id"], json.loads(event["data"])))
    return out


def _ticks(messages: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    return [m["params"]["data"] for _, m in messages
            if m.get("method") == "notifications/message"]


def _session_on(cluster: Cluster, worker: int) -> LegacySession:
    return LegacySession(cluster.urls[worker])


def _post_to(cluster: Cluster, worker: int, session: LegacySession, body: Any,
             **kwargs: Any) -> requests.Response:
    return requests.post(cluster.urls[worker], data=json.dumps(body),
                         headers=session.headers(**kwargs.pop("headers", {})), timeout=WAIT,
                         **kwargs)


# -- (a) an answer to a server request lands on another worker -----------------------------


def test_elicitation_answered_through_the_other_worker_with_the_client(cluster):
    # Requests go to worker 0 (which runs the tool and asks); answers go to worker 1.
    http, balancer = balanced_session(cluster, by_kind(answer=1, GET=1, DELETE=1))
    asked: list[str] = []

    def elicit(params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult("accept", {"name": "Ada"})

    with Client.http(FRONT + "/mcp", session=http, protocol_version=LEGACY, timeout=WAIT,
                     host=HostHandlers(elicitation=elicit)) as client:
        assert client.call_tool("ask").text == "accept:Ada@0"
        assert client.call_tool("ask").text == "accept:Ada@0"
    assert asked == ["Name?", "Name?"]
    assert ("answer", 1) in balancer.sent and ("request", 0) in balancer.sent


def test_elicitation_answered_through_the_other_worker_raw(cluster):
    session = LegacySession(cluster.urls[0], capabilities={"elicitation": {}})
    request_id, call = session.request("tools/call", {"name": "ask", "arguments": {}},
                                       stream=True)
    assert call.status_code == 200, call.text
    reader = SseReader(call)
    (_, question), = [m for m in _messages(reader, 1)]
    assert question["method"] == "elicitation/create"
    # Our requests name the worker that asked: ids never collide between workers.
    assert isinstance(question["id"], str) and question["id"].startswith(
        cluster.apps[0].relay.worker + "-")
    answer = _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": question["id"],
                                            "result": {"action": "accept",
                                                       "content": {"name": "Bo"}}})
    assert answer.status_code == 202, answer.text
    (_, final), = _messages(reader, 1)
    assert final["id"] == request_id
    assert final["result"]["content"][0]["text"] == "accept:Bo@0"
    call.close()


def test_request_ids_of_two_workers_never_collide(cluster):
    session = LegacySession(cluster.urls[0], capabilities={"elicitation": {}})
    ask = {"name": "ask", "arguments": {}}
    calls = [session.request("tools/call", ask, stream=True)[1] for _ in range(2)]  # on 0
    calls.append(_post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": 999,
                                                "method": "tools/call", "params": ask},
                          stream=True))
    ids = []
    readers = [SseReader(c) for c in calls]
    for reader in readers:
        (_, question), = _messages(reader, 1)
        ids.append(question["id"])
    assert len(set(ids)) == 3, ids
    for reader, question_id in zip(readers, ids, strict=True):
        reply = _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": question_id,
                                               "result": {"action": "decline"}})
        assert reply.status_code == 202
        (_, final), = _messages(reader, 1)
        assert final["result"]["content"][0]["text"].startswith("decline:None@")
    for call in calls:
        call.close()


# -- (b) a cancellation lands on another worker -------------------------------------------


def test_cancel_through_the_other_worker_with_the_client(cluster):
    http, _ = balanced_session(cluster, by_kind(notification=1, GET=1))
    with Client.http(FRONT + "/mcp", session=http, protocol_version=LEGACY,
                     timeout=WAIT) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("wait_cancel", timeout=1.0)
        # The timeout sent notifications/cancelled, to worker 1; the handler on 0 saw it.
        assert cluster.controls.cancelled.wait(WAIT)
    assert cluster.controls.ran_on == ["0"]


def test_cancel_through_the_other_worker_raw(cluster):
    session = _session_on(cluster, 0)
    request_id, call = session.request("tools/call", {"name": "wait_cancel", "arguments": {}},
                                       stream=True)
    assert cluster.controls.started.wait(WAIT)
    reply = _post_to(cluster, 1, session, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                           "params": {"requestId": request_id}})
    assert reply.status_code == 202
    assert cluster.controls.cancelled.wait(WAIT)
    # No answer for a cancelled request: its stream ends without one.
    assert [m for _, m in _drain(SseReader(call))] == []
    call.close()
    # The running worker let go of the stream (else the session would never be idle).
    wait_until(lambda: not cluster.apps[0].sessions.held(session.session_id).busy(),
               timeout=WAIT)


def _drain(reader: SseReader) -> list[tuple[str, dict[str, Any]]]:
    out = []
    while (event := reader.next_event()) is not None:
        if event.get("data") and event["data"].strip():
            out.append((event["id"], json.loads(event["data"])))
    return out


# -- (c) messages for the GET stream held by another worker --------------------------------


def test_logs_reach_the_get_stream_held_by_the_other_worker_with_the_client(cluster):
    http, _ = balanced_session(cluster, by_kind(GET=1))
    got: queue.Queue[LogMessage] = queue.Queue()
    with Client.http(FRONT + "/mcp", session=http, protocol_version=LEGACY, timeout=WAIT,
                     on_log=got.put) as client:
        assert client.call_tool("ticker", {"count": 5}).text == "started@0"
        for _ in range(5):
            cluster.controls.ticks.release()
        data = [got.get(timeout=WAIT).data for _ in range(5)]
    assert data == [0, 1, 2, 3, 4]


def test_get_stream_on_the_other_worker_gets_every_tick_once_raw(cluster):
    session = _session_on(cluster, 0)
    # Sent while no GET stream is connected anywhere: kept in the store, not lost.
    assert session.call("tools/call", {"name": "ticker", "arguments": {"count": 30}})[
        "result"]["content"][0]["text"] == "started@0"
    for _ in range(5):
        cluster.controls.ticks.release()
    wait_until(lambda: len(cluster.event_store) > 0, timeout=WAIT)
    stream = requests.get(cluster.urls[1], headers=_get_headers(session), stream=True,
                          timeout=WAIT)
    assert stream.status_code == 200
    reader = SseReader(stream)
    got = _messages(reader, 5)
    for _ in range(5):
        cluster.controls.ticks.release()
    got += _messages(reader, 5)
    assert _ticks(got) == list(range(10))
    # The stream drops; the client resumes through the other worker: nothing lost, nothing
    # twice.
    stream.close()
    last_id = got[-1][0]
    for _ in range(10):
        cluster.controls.ticks.release()
    resumed = requests.get(cluster.urls[0], headers=_get_headers(
        session, **{"Last-Event-ID": last_id}), stream=True, timeout=WAIT)
    assert resumed.status_code == 200
    reader = SseReader(resumed)
    got += _messages(reader, 10)
    for _ in range(10):
        cluster.controls.ticks.release()
    got += _messages(reader, 10)
    resumed.close()
    assert _ticks(got) == list(range(30))


def test_a_get_resumed_on_another_worker_takes_the_stream_over(cluster):
    session = _session_on(cluster, 0)
    old = requests.get(cluster.urls[0], headers=_get_headers(session), stream=True,
                       timeout=WAIT)
    old_reader = SseReader(old)
    session.call("tools/call", {"name": "ticker", "arguments": {"count": 10}})
    for _ in range(5):
        cluster.controls.ticks.release()
    got = _messages(old_reader, 5)
    # The old connection is left open (half-open, as the server sees it).
    resumed = requests.get(cluster.urls[1], headers=_get_headers(
        session, **{"Last-Event-ID": got[-1][0]}), stream=True, timeout=WAIT)
    reader = SseReader(resumed)
    while old_reader.next_event() is not None:
        pass  # worker 0 lets its connection go
    old.close()
    for _ in range(5):
        cluster.controls.ticks.release()
    got += _messages(reader, 5)
    resumed.close()
    assert _ticks(got) == list(range(10))


def _get_headers(session: LegacySession, **extra: str) -> dict[str, str]:
    headers = session.headers(Accept="text/event-stream", **extra)
    del headers["Content-Type"]
    return headers


# -- (f) DELETE on one worker ends the session on the others at once -----------------------


def test_delete_on_one_worker_ends_the_session_on_the_other_at_once(cluster):
    session = _session_on(cluster, 0)
    stream = requests.get(cluster.urls[0], headers=_get_headers(session), stream=True,
                          timeout=WAIT)
    assert stream.status_code == 200
    reader = SseReader(stream)
    assert cluster.held_by(session.session_id) == [0]
    deleted = requests.delete(cluster.urls[1], headers=session.headers(), timeout=WAIT)
    assert deleted.status_code == 200
    # Worker 0 ends its GET stream now, not at its next check of the store (10 s).
    assert _drain(reader) == []
    stream.close()
    wait_until(lambda: cluster.held_by(session.session_id) == [], timeout=WAIT)
    assert session.post({"jsonrpc": "2.0", "id": 5, "method": "ping"}).status_code == 404


# -- round-robin, both kinds of client ----------------------------------------------------


def test_round_robin_with_every_feature(cluster):
    http, balancer = balanced_session(cluster, round_robin())
    got: queue.Queue[LogMessage] = queue.Queue()
    with Client.http(FRONT + "/mcp", session=http, protocol_version=LEGACY, timeout=WAIT,
                     on_log=got.put,
                     host=HostHandlers(elicitation=lambda p: ElicitResult("accept", {"name": "Cy"}))
                     ) as client:
        for _ in range(4):
            assert client.call_tool("ask").text.startswith("accept:Cy@")
        client.call_tool("ticker", {"count": 3})
        for _ in range(3):
            cluster.controls.ticks.release()
        assert [got.get(timeout=WAIT).data for _ in range(3)] == [0, 1, 2]
    assert {index for _, index in balancer.sent} == {0, 1}


# -- failures of the bus or the store ------------------------------------------------------


class FlakyBus:
    """An InProcessBus that can be made unreachable (as Redis going down would)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = threading.Event()

    def publish(self, message: dict[str, Any]) -> None:
        from mcpsync.errors import StoreUnavailableError

        if self.down.is_set():
            raise StoreUnavailableError("bus down (test)")
        self.inner.publish(message)

    def subscribe(self, callback: Any) -> Any:
        return self.inner.subscribe(callback)

    def close(self) -> None:
        self.inner.close()


def test_bus_down_is_a_503_then_recovers():
    from mcpsync.http.bus import InProcessBus

    bus = FlakyBus(InProcessBus())
    with Cluster(bus=bus) as cluster:
        session = LegacySession(cluster.urls[0], capabilities={"elicitation": {}})
        _, call = session.request("tools/call", {"name": "ask", "arguments": {}}, stream=True)
        reader = SseReader(call)
        (_, question), = _messages(reader, 1)
        answer = {"jsonrpc": "2.0", "id": question["id"],
                  "result": {"action": "accept", "content": {"name": "Di"}}}
        bus.down.set()
        refused = _post_to(cluster, 1, session, answer)
        assert refused.status_code == 503
        assert refused.headers["Content-Type"] == "application/json"
        assert refused.json()["error"]["code"] == -32603
        bus.down.clear()  # the bus is back: the client's retry goes through
        assert _post_to(cluster, 1, session, answer).status_code == 202
        (_, final), = _messages(reader, 1)
        assert final["result"]["content"][0]["text"] == "accept:Di@0"
        call.close()


class FlakyStore:
    """A MemorySessionStore that can be made unreachable."""

    def __init__(self) -> None:
        from mcpsync.http.session_store import MemorySessionStore

        self.inner = MemorySessionStore()
        self.down = threading.Event()

    @property
    def capabilities(self) -> Any:
        """Shared state, as the store it wraps (its changes can fail too)."""
        from mcpsync.stores import SessionStoreCapabilities

        return SessionStoreCapabilities(shared_state=self)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def call(*args: Any) -> Any:
            from mcpsync.errors import StoreUnavailableError

            if self.down.is_set():
                raise StoreUnavailableError("store down (test)")
            return method(*args)

        return call


def test_session_store_down_is_a_503_then_recovers():
    store = FlakyStore()
    with Cluster(session_store=store) as cluster:
        session = _session_on(cluster, 0)
        store.down.set()
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        refused = _post_to(cluster, 1, session, ping)  # worker 1 must load the record
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == -32603
        # Worker 0 holds the session: it serves it, but cannot share a new log level.
        level = _post_to(cluster, 0, session, {"jsonrpc": "2.0", "id": 8,
                                               "method": "logging/setLevel",
                                               "params": {"level": "error"}})
        assert level.status_code == 200
        assert answer_of(level, 8)["error"]["code"] == -32603
        store.down.clear()
        recovered = _post_to(cluster, 1, session, ping)
        assert recovered.status_code == 200 and answer_of(recovered, 7)["result"] == {}


# -- (d) a POST stream resumed through another worker while its handler runs --------------


@pytest.mark.parametrize("old_connection", ["held", "closed"])
def test_post_stream_resumed_through_the_other_worker(cluster, old_connection):
    session = _session_on(cluster, 0)
    request_id, old = session.request(
        "tools/call", {"name": "count", "arguments": {"n": 20}}, stream=True,
        headers={"Accept": "text/event-stream, application/json"})
    assert old.status_code == 200
    old_reader = SseReader(old)
    last_id = old_reader.next_event()["id"]  # the priming event
    got: list[tuple[str, dict[str, Any]]] = []
    for _ in range(5):
        cluster.controls.ticks.release()
        got += _messages(old_reader, 1)
    if old_connection == "closed":
        old.close()
    for _ in range(5):
        cluster.controls.ticks.release()  # some of these may go to the old connection
    resumed = requests.get(cluster.urls[1], headers=_get_headers(
        session, **{"Last-Event-ID": got[-1][0]}), stream=True, timeout=WAIT)
    assert resumed.status_code == 200, resumed.text
    reader = SseReader(resumed)
    got += _messages(reader, 5)
    if old_connection == "held":
        assert all(m.get("id") != request_id for _, m in _drain(old_reader))
        old.close()
    for _ in range(10):
        cluster.controls.ticks.release()
    got += _messages(reader, 11)
    resumed.close()
    assert _ticks(got) == list(range(20))
    final = got[-1][1]
    assert final["id"] == request_id
    assert final["result"]["content"][0]["text"] == "done@0"
    assert len({event_id for event_id, _ in got}) == len(got)  # each event once
    assert last_id.split("_")[0] == got[-1][0].split("_")[0]  # one stream, one key
    # Both workers let go of the stream once its answer went out whole.
    wait_until(lambda: len(cluster.event_store) == 0, timeout=WAIT,
               message=lambda: f"{len(cluster.event_store)} streams kept")


# -- (e) logging/setLevel and resources/subscribe received by another worker ---------------


def _level_of(cluster: Cluster, worker: int, session_id: str) -> bool:
    held = cluster.apps[worker].sessions.held(session_id)
    return held is not None and not held.server_session.log_enabled("info")


def test_set_level_on_one_worker_filters_logs_sent_by_another():
    with Cluster(3) as cluster:
        session = _session_on(cluster, 0)  # held by worker 0 from initialize on
        reply = _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": 3,
                                               "method": "logging/setLevel",
                                               "params": {"level": "error"}})
        assert reply.status_code == 200 and answer_of(reply, 3)["result"] == {}
        # Worker 0 applies it as the bus brings it (it does not ask the store per request).
        wait_until(lambda: _level_of(cluster, 0, session.session_id), timeout=WAIT)
        for worker in (0, 2):  # 2 takes the session up from its record, level included
            call = _post_to(cluster, worker, session, {
                "jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "logs", "arguments": {}}},
                headers={"Accept": "text/event-stream"}, stream=True)
            messages = SseReader(call).messages(until_id=4)
            logs = [m["params"]["data"] for m in messages
                    if m.get("method") == "notifications/message"]
            assert logs == ["an error line"], (worker, messages)
            assert messages[-1]["result"]["content"][0]["text"] == str(worker)


def test_subscribe_on_one_worker_update_through_another_arrives_once():
    with Cluster(3) as cluster:
        session = _session_on(cluster, 0)
        subscribed = _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": 3,
                                                    "method": "resources/subscribe",
                                                    "params": {"uri": "relay://item"}})
        assert subscribed.status_code == 200, subscribed.text
        stream = requests.get(cluster.urls[1], headers=_get_headers(session), stream=True,
                              timeout=WAIT)
        reader = SseReader(stream)
        # Updated through worker 0, which holds the session too; then through worker 2,
        # which does not (another client's call there).
        touch = {"name": "touch", "arguments": {"uri": "relay://item"}}
        assert session.call("tools/call", touch)["result"]["content"][0]["text"] == "0"
        other = _session_on(cluster, 2)
        assert other.call("tools/call", touch)["result"]["content"][0]["text"] == "2"
        assert cluster.held_by(session.session_id) == [0, 1]
        # Then a log line through the GET stream: had an update been sent twice, the
        # second would come before it (one key, in order).
        session.call("tools/call", {"name": "ticker", "arguments": {"count": 1}})
        cluster.controls.ticks.release()
        got = [m for _, m in _messages(reader, 3)]
        assert got[:2] == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                            "params": {"uri": "relay://item"}}] * 2
        assert got[2]["method"] == "notifications/message" and got[2]["params"]["data"] == 0
        # Unsubscribed through worker 2: no more updates, wherever they are made.
        assert _post_to(cluster, 2, session, {"jsonrpc": "2.0", "id": 5,
                                              "method": "resources/unsubscribe",
                                              "params": {"uri": "relay://item"}}
                        ).status_code == 200
        assert session.call("tools/call", touch)["result"]["content"][0]["text"] == "0"
        session.call("tools/call", {"name": "ticker", "arguments": {"count": 1}})
        cluster.controls.ticks.release()
        (_, after), = _messages(reader, 1)
        assert after["method"] == "notifications/message"
        stream.close()


def test_subscribe_and_updates_with_the_client(cluster):
    http, _ = balanced_session(cluster, round_robin())
    updates: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
    logs: queue.Queue[LogMessage] = queue.Queue()
    with Client.http(FRONT + "/mcp", session=http, protocol_version=LEGACY, timeout=WAIT,
                     on_log=logs.put,
                     on_notification=lambda method, params: updates.put((method, params))
                     ) as client:
        client.subscribe("relay://item")
        for _ in range(4):  # alternately on each worker
            client.call_tool("touch", {"uri": "relay://item"})
        # A log line after them on the same GET stream: once it is in, every update sent
        # before it is too (notifications are handed over in order).
        client.call_tool("ticker", {"count": 1})
        cluster.controls.ticks.release()
        assert logs.get(timeout=WAIT).data == 0
        got = []
        while not updates.empty():
            got.append(updates.get_nowait())
    assert got == [("notifications/resources/updated", {"uri": "relay://item"})] * 4


def test_a_fresh_get_on_another_worker_repeats_nothing(cluster):
    from mcpsync.http.relay import cursor_key, read_cursor
    from mcpsync.http.sessions import key_prefix

    session = _session_on(cluster, 0)
    session.call("tools/call", {"name": "ticker", "arguments": {"count": 15}})
    first = requests.get(cluster.urls[1], headers=_get_headers(session), stream=True,
                         timeout=WAIT)
    reader = SseReader(first)
    for _ in range(5):
        cluster.controls.ticks.release()
    got = _messages(reader, 5)
    first.close()
    # Worker 1 notes how far its GET got once it sees the connection closed.
    where = cursor_key(key_prefix(session.session_id))
    wait_until(lambda: read_cursor(cluster.event_store, where) == got[-1][0], timeout=WAIT)
    for _ in range(5):
        cluster.controls.ticks.release()  # sent while no GET is connected: kept
    wait_until(lambda: (cluster.event_store.events_after(got[-1][0]) or ("", []))[1][4:],
               timeout=WAIT)
    # A GET without Last-Event-ID (the client gave up resuming), through worker 0.
    second = requests.get(cluster.urls[0], headers=_get_headers(session), stream=True,
                          timeout=WAIT)
    reader = SseReader(second)
    got += _messages(reader, 5)
    for _ in range(5):
        cluster.controls.ticks.release()
    got += _messages(reader, 5)
    second.close()
    assert _ticks(got) == list(range(15))


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_handshake_version_with_the_client(cluster, version):
    from mcpsync import CreateMessageResult, TextContent

    http, balancer = balanced_session(cluster, by_kind(answer=1, GET=1, notification=1))
    got: queue.Queue[LogMessage] = queue.Queue()
    with Client.http(FRONT + "/mcp", session=http, protocol_version=version, timeout=WAIT,
                     on_log=got.put,
                     host=HostHandlers(sampling=lambda p: CreateMessageResult(
                                           "assistant", TextContent("hi"), model="m"))) as client:
        assert client.call_tool("ask_model").text == "m:hi@0"
        assert client.call_tool("ticker", {"count": 2}).text == "started@0"
        for _ in range(2):
            cluster.controls.ticks.release()
        assert [got.get(timeout=WAIT).data for _ in range(2)] == [0, 1]
    assert ("answer", 1) in balancer.sent and ("GET", 1) in balancer.sent


def test_shared_state_in_a_file_session_store(tmp_path):
    from mcpsync.http import FileSessionStore

    with Cluster(3, session_store=FileSessionStore(tmp_path)) as cluster:
        session = _session_on(cluster, 0)
        assert _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": 3,
                                              "method": "resources/subscribe",
                                              "params": {"uri": "relay://item"}}
                        ).status_code == 200
        assert _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": 4,
                                              "method": "logging/setLevel",
                                              "params": {"level": "error"}}
                        ).status_code == 200
        stream = requests.get(cluster.urls[2], headers=_get_headers(session), stream=True,
                              timeout=WAIT)
        reader = SseReader(stream)
        other = _session_on(cluster, 1)
        other.call("tools/call", {"name": "touch", "arguments": {"uri": "relay://item"}})
        (_, update), = _messages(reader, 1)
        assert update == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                          "params": {"uri": "relay://item"}}
        stream.close()
        record = cluster.session_store.load(session.session_id)
        assert record.log_level == "error" and record.subscriptions == {"relay://item"}


def test_bad_bus_messages_are_logged_and_the_relay_goes_on(cluster, caplog):
    session = LegacySession(cluster.urls[0], capabilities={"elicitation": {}})
    sid = session.session_id
    with caplog.at_level(logging.WARNING, logger="mcpsync.http"):
        for junk in ({"kind": "answer", "session": sid, "message": "not json"},
                     {"kind": "level", "session": sid, "level": "no such level"},
                     {"kind": "ring", "session": sid, "key": 5},
                     {"kind": "unknown", "session": sid},
                     {"kind": "cancel", "session": 7}):
            cluster.bus.publish({**junk, "origin": "elsewhere"})
        # The same relay thread still carries an answer across.
        _, call = session.request("tools/call", {"name": "ask", "arguments": {}}, stream=True)
        reader = SseReader(call)
        (_, question), = _messages(reader, 1)
        assert _post_to(cluster, 1, session, {"jsonrpc": "2.0", "id": question["id"],
                                              "result": {"action": "decline"}}
                        ).status_code == 202
        (_, final), = _messages(reader, 1)
        call.close()
    assert final["result"]["content"][0]["text"] == "decline:None@0"
    assert "applying a 'level' message failed" in caplog.text
    assert all(thread.is_alive() for thread in threading.enumerate()
               if thread.name.startswith("mcpsync-relay-"))
