"""The handshake era (2025-11-25) across machines, on Redis: nginx round-robin (no
stickiness) over two gunicorn instances sharing one Redis for sessions, SSE events, tasks
and the relay bus (``tests/deploy/app.py`` with ``MCPSYNC_DEPLOY_STORE=redis``).

Where the point is that something crosses from one instance to the other, the test talks
to each instance directly (``topology.instance("a").url``), so that it is certain which
instance held what; the same flows also run through the balancer with ``Client.http``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import Client, ElicitResult, HostHandlers
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import require_module, wait_until
from tests.http.raw import LegacySession, SseReader, answer_of, post_modern
from tests.interop.peers import run_official_client
from tests.services import RedisServer, unique_prefix

from .app import COUNTER_URI
from .conftest import MakeTopology, TopologyMaker, shared
from .topology import Topology

require_module("redis")

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ROOT = Path(__file__).resolve().parents[2]


def redis_env(url: str, prefix: str) -> dict[str, str]:
    return {"MCPSYNC_DEPLOY_STORE": "redis", "MCPSYNC_DEPLOY_REDIS_URL": url,
            "MCPSYNC_DEPLOY_REDIS_PREFIX": prefix}


@pytest.fixture(scope="module")
def shared_on_redis(module_topologies: TopologyMaker, redis_server: RedisServer) -> Topology:
    return module_topologies(env=redis_env(redis_server.url, unique_prefix("deploy-shared")))


@pytest.fixture
def on_redis(module_topologies: TopologyMaker, shared_on_redis: Topology) -> Iterator[Topology]:
    """Two instances on the run-wide Redis, shared by the module's tests that leave them
    whole (each test's sessions and tasks are its own; those that kill an instance use
    ``own_on_redis``)."""
    yield from shared(module_topologies, shared_on_redis)


@pytest.fixture
def own_on_redis(make_topology: MakeTopology, redis_url: str, redis_prefix: str) -> Topology:
    """Two instances on the run-wide Redis (this test's own key prefix), this test's own."""
    return make_topology(env=redis_env(redis_url, redis_prefix))


def session_on(url: str, **capabilities: Any) -> LegacySession:
    """A raw 2025-11-25 session initialized at ``url``; point ``.url`` elsewhere to send its
    next requests to another instance."""
    return LegacySession(url, LEGACY, capabilities=capabilities)


def call_body(request_id: int, tool: str, arguments: dict[str, Any] | None = None,
              token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def messages_of(reader: SseReader, wanted: int, what: str) -> list[dict[str, Any]]:
    """The next ``wanted`` JSON-RPC messages of an open stream (its reads are bounded by the
    response's timeout)."""
    out: list[dict[str, Any]] = []
    while len(out) < wanted:
        event = reader.next_event()
        assert event is not None, f"the stream ended after {len(out)} {what}"
        if event.get("data"):
            out.append({**json.loads(event["data"]), "_event_id": event.get("id")})
    return out


def legacy_client(url: str, **options: Any) -> Client:
    return Client.http(url, protocol_version=LEGACY, timeout=WAIT, **options)


def grace(params: Any) -> ElicitResult:
    return ElicitResult("accept", {"name": "Grace"})


# -- server requests: the answer lands on the other instance --------------------------------


def test_an_elicitation_answer_posted_to_the_other_instance_reaches_the_asking_handler(
        on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    session = session_on(a.url, elicitation={})
    call = session.post(call_body(7, "ask"), stream=True)
    assert call.status_code == 200
    reader = SseReader(call)
    [question] = [m for m in messages_of(reader, 1, "messages")
                  if m.get("method") == "elicitation/create"] or [None]
    assert question is not None and "asked by a:" in question["params"]["message"]
    session.url = b.url  # the answer goes to the other machine
    answered = session.post({"jsonrpc": "2.0", "id": question["id"],
                             "result": {"action": "accept", "content": {"name": "Grace"}}})
    assert answered.status_code == 202, answered.text
    [final] = [m for m in reader.messages(until_id=7) if m.get("id") == 7]
    assert final["result"]["structuredContent"]["name"] == "Grace"
    assert final["result"]["structuredContent"]["instance"] == "a"


def test_elicitation_through_the_balancer_with_mcpsync_s_client(on_redis: Topology):
    with legacy_client(on_redis.url, host=HostHandlers(elicitation=grace)) as client:
        assert client.protocol_version == LEGACY
        for _ in range(6):  # the GET stream, calls and answers spread over both instances
            result = client.call_tool("ask", {})
            assert result.structured_content["name"] == "Grace"  # type: ignore[index]


@pytest.mark.interop
def test_elicitation_through_the_balancer_with_the_official_client(on_redis: Topology):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(3):
        report = run_official_client(
            ["--mode", "legacy", "--elicit-json", '{"name": "Grace"}', "call", "ask", "{}"],
            url=on_redis.url, env=env, timeout=WAIT * 2)
        assert report["protocolVersion"] == LEGACY
        assert report["result"]["structuredContent"]["name"] == "Grace"


# -- the GET stream: notifications from the other instance ---------------------------------


def test_progress_and_logs_reach_a_get_stream_held_by_the_other_instance(on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    session = session_on(a.url)
    session.url = b.url
    stream = session.get()  # held by b
    assert stream.status_code == 200
    session.url = a.url
    reply = session.post(call_body(3, "ticks_detached", {"count": 10, "ms": 20}, token="t"),
                         headers={"Accept": "application/json"})  # notifications: GET only
    assert answer_of(reply, 3)["result"]["structuredContent"]["instance"] == "a"
    seen = messages_of(SseReader(stream), 20, "notifications")
    progress = [m["params"]["progress"] for m in seen
                if m["method"] == "notifications/progress"]
    logs = [m["params"]["data"] for m in seen if m["method"] == "notifications/message"]
    assert progress == list(range(1, 11))
    assert logs == [f"tick {i} on a" for i in range(1, 11)]
    stream.close()


def test_set_level_through_one_instance_filters_logs_sent_by_the_other(on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    session = session_on(a.url)
    stream = session.get()  # held by a, like the handler
    session.url = b.url
    assert "result" in session.call("logging/setLevel", {"level": "error"})
    session.url = a.url
    reply = session.post(call_body(4, "ticks_detached", {"count": 3, "ms": 0}, token="t"),
                         headers={"Accept": "application/json"})
    assert "result" in answer_of(reply, 4)
    seen = messages_of(SseReader(stream), 3, "notifications")
    # Each tick logs before its progress: info logs were filtered out by b's setLevel.
    assert [m["method"] for m in seen] == ["notifications/progress"] * 3
    stream.close()


def test_progress_and_logs_through_the_balancer_with_mcpsync_s_client(on_redis: Topology):
    logs: list[str] = []
    ten = threading.Event()

    def on_log(message: Any) -> None:
        logs.append(message.data)
        if len(logs) == 10:
            ten.set()

    with legacy_client(on_redis.url, on_log=on_log, log_level="info") as client:
        for _ in range(2):
            logs.clear()
            ten.clear()
            client.call_tool("ticks_detached", {"count": 10, "ms": 20})
            assert ten.wait(WAIT), logs
            assert [text.split(" on ")[0] for text in logs] == [f"tick {i}" for i in range(1, 11)]


# -- resources/subscribe and subscriptions/listen across instances -------------------------


def test_a_resource_update_made_on_the_other_instance_reaches_the_subscriber(
        on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    session = session_on(a.url)
    assert "result" in session.call("resources/subscribe", {"uri": COUNTER_URI})
    stream = session.get()
    bumped = post_modern(b.url, "tools/call", {"name": "bump", "arguments": {}})
    assert answer_of(bumped)["result"]["structuredContent"]["instance"] == "b"
    [update] = messages_of(SseReader(stream), 1, "notifications")
    assert update["method"] == "notifications/resources/updated"
    assert update["params"]["uri"] == COUNTER_URI
    stream.close()


def test_a_listen_sees_a_change_made_on_the_other_instance(on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    updated = threading.Event()

    def on_note(note: Any) -> None:
        if note.method == "notifications/resources/updated":
            updated.set()

    with Client.http(a.url, protocol_version=MODERN, timeout=WAIT) as listener, \
            listener.listen(resource_uris=[COUNTER_URI], on_notification=on_note):
        with Client.http(b.url, protocol_version=MODERN, timeout=WAIT) as other:
            assert other.call_tool("bump", {}).structured_content["instance"] == "b"  # type: ignore[index]
        assert updated.wait(WAIT), "the listen on a never heard of b's change"


# -- cancellation routed to the other instance ---------------------------------------------


def test_a_cancel_posted_to_the_other_instance_stops_the_call(on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    session = session_on(a.url)
    call = session.post(call_body(9, "ticks", {"count": 1200, "ms": 50}, token="c"),
                        stream=True)
    reader = SseReader(call)
    messages_of(reader, 2, "progress notifications")  # it is running, on a
    session.url = b.url
    started = time.monotonic()
    cancel = session.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 9, "reason": "changed my mind"}})
    assert cancel.status_code == 202
    rest = reader.messages(until_id=9)  # the stream ends: no answer for a cancelled call
    assert not any(m.get("id") == 9 for m in rest), rest[-3:]
    assert time.monotonic() - started < 30  # not the 60 s the call would have taken


# -- tasks on Redis ----------------------------------------------------------------------------


def test_a_task_created_on_one_instance_is_finished_through_the_other(on_redis: Topology):
    a, b = on_redis.instance("a"), on_redis.instance("b")
    with Client.http(a.url, protocol_version=MODERN, timeout=WAIT) as on_a:
        handle = on_a.start_task("slow", {"seconds": 1.0})
    with Client.http(b.url, protocol_version=MODERN, timeout=WAIT) as on_b:
        result = on_b.task(handle.id).result(timeout=WAIT)  # type: ignore[arg-type]
    assert result.structured_content["instance"] == "a"  # type: ignore[index]


# -- faults ------------------------------------------------------------------------------------


def test_a_get_stream_resumed_after_its_instance_dies_delivers_every_event_once(
        own_on_redis: Topology):
    on_redis = own_on_redis  # it kills an instance
    a, b = on_redis.instance("a"), on_redis.instance("b")
    session = session_on(a.url)  # created on the instance that will die
    stream = session.get()
    reader = SseReader(stream)
    session.url = b.url  # the producer lives on
    producer = threading.Thread(target=session.post, name="deploy-producer",
                                args=(call_body(5, "ticks_detached",
                                                {"count": 30, "ms": 100}, token="k"),),
                                kwargs={"headers": {"Accept": "application/json"}})
    producer.start()
    before = messages_of(reader, 10, "notifications")
    on_redis.kill_instance("a")
    stream.close()
    session.url = on_redis.url  # resume through the balancer: only b is left
    resumed = session.get(headers={"Last-Event-ID": before[-1]["_event_id"]})
    assert resumed.status_code == 200
    after = messages_of(SseReader(resumed), 60 - len(before), "notifications")
    producer.join(WAIT)
    progress = [m["params"]["progress"] for m in before + after
                if m["method"] == "notifications/progress"]
    assert progress == list(range(1, 31))  # every tick, exactly once, in order
    resumed.close()
    # The session created on the dead instance keeps working, through the balancer.
    answer = session.call("tools/call", {"name": "whoami", "arguments": {}})
    assert answer["result"]["structuredContent"]["instance"] == "b"


def test_a_client_keeps_its_session_when_an_instance_dies(own_on_redis: Topology):
    on_redis = own_on_redis  # it kills an instance
    with legacy_client(on_redis.url, host=HostHandlers(elicitation=grace)) as client:
        seen = {client.call_tool("whoami", {}).structured_content["instance"]  # type: ignore[index]
                for _ in range(4)}
        assert seen == {"a", "b"}
        on_redis.kill_instance("a")
        for _ in range(4):  # calls, answers to questions and the GET stream: all on b now
            asked = client.call_tool("ask", {}).structured_content
            assert (asked["instance"], asked["name"]) == ("b", "Grace")  # type: ignore[index]


def test_tasks_of_a_killed_instance_are_served_by_the_other(
        make_topology: MakeTopology, redis_url: str, redis_prefix: str):
    """A finished task's result outlives its machine; a task still running there fails
    (its runner's heartbeat expires) instead of staying "working" for ever."""
    topology = make_topology(env={**redis_env(redis_url, redis_prefix),
                                  "MCPSYNC_DEPLOY_TASK_HEARTBEAT_TTL": "3"})
    with Client.http(topology.instance("a").url, protocol_version=MODERN,
                     timeout=WAIT) as on_a:
        done = on_a.start_task("slow", {"seconds": 0.1})
        assert done.result(timeout=WAIT).structured_content["instance"] == "a"  # type: ignore[index]
        running = on_a.start_task("slow", {"seconds": 300.0})
        assert running.status().status == "working"
    topology.kill_instance("a")
    with Client.http(topology.url, protocol_version=MODERN, timeout=WAIT) as client:
        result = client.task(done.id).result(timeout=WAIT)  # type: ignore[arg-type]
        assert result.structured_content["instance"] == "a"  # type: ignore[index]
        handle = client.task(running.id)  # type: ignore[arg-type]
        wait_until(lambda: handle.status().status == "failed", timeout=WAIT, interval=0.5,
                   message="the dead instance's running task never failed")


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def test_redis_going_away_is_a_503_and_the_system_recovers(
        make_topology: MakeTopology, private_redis: RedisServer, redis_prefix: str):
    topology = make_topology(env=redis_env(private_redis.url, redis_prefix))
    session = session_on(topology.url)
    assert "result" in session.call("tools/call", {"name": "whoami", "arguments": {}})
    private_redis.kill()
    started = time.monotonic()
    for _ in range(2):  # both instances
        # A new session cannot be written down: 503 with a JSON-RPC body.
        response = requests.post(topology.url, timeout=WAIT, headers={
            "Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}})
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["jsonrpc"] == "2.0" and body["error"]["code"] < 0, body
        # An existing session: served from what the worker holds, or the same 503.
        _, response = session.request("tools/call", {"name": "whoami", "arguments": {}})
        assert response.status_code in (200, 503), response.text
        if response.status_code == 503:
            assert response.json()["error"]["code"] < 0
    assert time.monotonic() - started < 20, "Redis being down must not hang requests"
    # The 2026-07-28 wire needs no Redis for a plain call.
    plain = post_modern(topology.url, "tools/call", {"name": "whoami", "arguments": {}})
    assert plain.status_code == 200
    private_redis.start()  # same port, empty (no persistence): the old session is gone

    def recovered() -> bool:
        try:
            fresh = session_on(topology.url)
        except (AssertionError, requests.RequestException):
            return False
        return "result" in fresh.call("tools/call", {"name": "whoami", "arguments": {}})

    wait_until(recovered, timeout=WAIT, interval=0.2, message="never recovered from Redis")
    with legacy_client(topology.url) as client:  # and a real client, on both instances
        assert {client.call_tool("whoami", {}).structured_content["instance"]  # type: ignore[index]
                for _ in range(4)} == {"a", "b"}
