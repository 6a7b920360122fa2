"""A message relayed between workers runs the receive middleware once: on the worker its
POST reached, with that request's headers; what the middleware passed on (changed, or
not at all) is what the other worker gets, in its original context.

The bug: the receiving worker published the raw message whatever its middleware did, and
the worker holding the session ran the middleware a second time on it, with no headers
and no auth (so a middleware that refused or rewrote answers saw a second, context-free
copy, and one that dropped an answer on the first worker had no effect).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import requests

from mcpsync.dispatch.inbound import TransportContext, current_transport
from mcpsync.http.bus import InProcessBus
from mcpsync.http.relay import Relay
from mcpsync.protocol.jsonrpc import Message, Notification, Response
from mcpsync.server.session import ServerSession

from .raw import WAIT, LegacySession, SseReader
from .relay_cluster import Cluster


class Seen:
    """What each worker's receive middleware saw of answers and cancellations."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[tuple[int, str, str | None, str | None]] = []

    def middleware(self, worker: int) -> Callable[[Message, Callable[[Message], None]], None]:
        def recv(message: Message, next_: Callable[[Message], None]) -> None:
            transport = current_transport()
            probe = transport.headers.get("x-probe") if transport is not None else None
            remote = transport.remote_addr if transport is not None else None
            if isinstance(message, Response) and "action" in message.result:
                with self.lock:
                    self.records.append((worker, "answer", probe, remote))
                if transport is not None and transport.headers.get("x-drop"):
                    return  # refused here: must reach no worker
                content = dict(message.result.get("content") or {})
                content["name"] = f"{content.get('name')}+checked"
                message = Response(message.id, {**message.result, "content": content})
            elif isinstance(message, Notification) and (
                    message.method == "notifications/cancelled"):
                with self.lock:
                    self.records.append((worker, "cancel", probe, remote))
            next_(message)

        return recv

    def of(self, kind: str) -> list[tuple[int, str | None, str | None]]:
        with self.lock:
            return [(w, probe, remote) for w, k, probe, remote in self.records if k == kind]


def _cluster(seen: Seen) -> Cluster:
    cluster = Cluster()
    for index, app in enumerate(cluster.apps):  # before any session copies the chain
        app.server.recv_middleware.append(seen.middleware(index))
    return cluster


def _post(url: str, session: LegacySession, body: Any, **headers: str) -> requests.Response:
    return requests.post(url, data=json.dumps(body), headers=session.headers(**headers),
                         timeout=WAIT)


def _question(reader: SseReader) -> dict[str, Any]:
    while True:
        event = reader.next_event()
        assert event is not None, "the stream ended before the question"
        if event.get("data", "").strip():
            message: dict[str, Any] = json.loads(event["data"])
            return message


def test_a_relayed_answer_runs_receive_middleware_once_and_as_it_passed_it() -> None:
    seen = Seen()
    with _cluster(seen) as cluster:
        session = LegacySession(cluster.urls[0], capabilities={"elicitation": {}})
        request_id, call = session.request("tools/call", {"name": "ask", "arguments": {}},
                                           stream=True)
        try:
            assert call.status_code == 200, call.text
            reader = SseReader(call)
            question = _question(reader)
            assert question["method"] == "elicitation/create"

            def answer(name: str, **headers: str) -> None:
                reply = _post(cluster.urls[1], session, {
                    "jsonrpc": "2.0", "id": question["id"],
                    "result": {"action": "accept", "content": {"name": name}}}, **headers)
                assert reply.status_code == 202, reply.text

            # Refused by worker 1's middleware: worker 0 must never get it.
            answer("dropped", **{"X-Probe": "first", "X-Drop": "yes"})
            answer("Bo", **{"X-Probe": "second"})
            final = _question(reader)
            assert final["id"] == request_id
            # Changed once, on worker 1: the tool on worker 0 got the changed answer.
            assert final["result"]["content"][0]["text"] == "accept:Bo+checked@0"
        finally:
            call.close()
    assert seen.of("answer") == [(1, "first", "127.0.0.1"), (1, "second", "127.0.0.1")]


def test_a_relayed_cancellation_runs_receive_middleware_once() -> None:
    seen = Seen()
    with _cluster(seen) as cluster:
        session = LegacySession(cluster.urls[0])
        request_id, call = session.request(
            "tools/call", {"name": "wait_cancel", "arguments": {}}, stream=True)
        try:
            assert cluster.controls.started.wait(WAIT)
            reply = _post(cluster.urls[1], session, {
                "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request_id}}, **{"X-Probe": "cancel"})
            assert reply.status_code == 202
            assert cluster.controls.cancelled.wait(WAIT)
        finally:
            call.close()
    assert seen.of("cancel") == [(1, "cancel", "127.0.0.1")]


class _Held:
    """A session held by a worker, as the relay applies bus messages to it: records the
    relayed messages and the context each came with."""

    def __init__(self) -> None:
        self.fed: list[tuple[Message, TransportContext | None]] = []
        self.arrived = threading.Event()

    @property
    def server_session(self) -> ServerSession:
        raise AssertionError("not used by answers and cancellations")

    def ring(self, key: str) -> None: ...

    def let_go(self, key: str) -> None: ...

    def feed_relayed(self, message: Message, transport: TransportContext | None) -> None:
        self.fed.append((message, transport))
        self.arrived.set()


class _Sessions:
    def __init__(self, held: _Held) -> None:
        self._held = held

    def held(self, session_id: str) -> _Held | None:
        return self._held if session_id == "s1" else None

    def end_here(self, session_id: str) -> None: ...


def test_a_relayed_message_arrives_with_its_original_headers_and_address() -> None:
    bus = InProcessBus()
    sender, receiver = Relay(bus), Relay(bus)
    held = _Held()
    receiver.sessions = _Sessions(held)
    try:
        context = TransportContext("http", headers={"X-Probe": "p", "User-Agent": "ua"},
                                   remote_addr="10.0.0.7", session_id="s1")
        sender.publish_message("cancel", "s1", Notification(
            "notifications/cancelled", {"requestId": 3}), context)
        assert held.arrived.wait(WAIT)
    finally:
        sender.close()
        receiver.close()
        bus.close()
    (message, transport), = held.fed
    assert isinstance(message, Notification) and message.method == "notifications/cancelled"
    assert transport is not None
    assert dict(transport.headers) == {"x-probe": "p", "user-agent": "ua"}
    assert transport.remote_addr == "10.0.0.7" and transport.session_id == "s1"
    assert transport.kind == "http" and transport.auth is None
