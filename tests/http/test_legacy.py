"""Handshake-era Streamable HTTP (2025-03-26 … 2025-11-25): sessions, the GET stream,
batches, expiry, resumability and reverse requests, on a real socket."""

from __future__ import annotations

import json
import threading

import pytest
import requests
from freezegun import freeze_time

from mcpsync import HandlerContext, Server
from tests.helpers import wait_until
from tests.spec import validate, validate_message

from .raw import BOTH, LEGACY, WAIT, LegacySession, SseReader, answer_of

VISIBLE_ASCII = {chr(c) for c in range(0x21, 0x7F)}


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_initialize_mints_random_visible_session_ids(url, version):
    first, second = LegacySession(url, version), LegacySession(url, version)
    for session in (first, second):
        assert session.session_id and set(session.session_id) <= VISIBLE_ASCII
        assert len(session.session_id) >= 16
        assert session.init_response.headers["Content-Type"] == "application/json"
        result = session.init_result["result"]
        assert result["protocolVersion"] == version
        validate_message(version, session.init_result)
        validate(version, "InitializeResult", result)
    assert first.session_id != second.session_id
    listing = first.call("tools/list")
    validate(version, "ListToolsResult", listing["result"])
    assert "echo" in {t["name"] for t in listing["result"]["tools"]}


def test_requests_without_session_id_are_400(url):
    LegacySession(url)
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    for extra in ({"MCP-Protocol-Version": LEGACY}, {}):
        response = requests.post(url, data=json.dumps(body), timeout=WAIT, headers={
            "Content-Type": "application/json", "Accept": BOTH, **extra})
        assert response.status_code == 400, response.text
        assert response.json()["id"] == 3


def test_unsupported_protocol_version_header_in_session(url):
    session = LegacySession(url)
    _, response = session.request("tools/list", headers={"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400


def test_calls_with_progress_stream_on_the_post(url):
    session = LegacySession(url)
    request_id, response = session.request(
        "tools/call", {"name": "progress", "arguments": {"steps": 3},
                       "_meta": {"progressToken": "p"}}, stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    messages = SseReader(response).messages(request_id)
    for message in messages:
        validate_message(LEGACY, message)
    assert [m.get("method") for m in messages[:-1]] == ["notifications/progress"] * 3
    assert messages[-1]["result"]["content"][0]["text"] == "ok"


def small_server() -> Server:
    srv = Server("legacy-small")

    @srv.tool()
    def hello() -> str:
        return "hello"

    return srv


def test_get_stream_receives_list_changed_and_second_get_conflicts(serve):
    srv = small_server()
    url = serve(srv).url
    session = LegacySession(url)
    session.call("ping")  # notifications/initialized is processed before this answers
    stream = session.get()
    try:
        assert stream.status_code == 200
        assert stream.headers["Content-Type"] == "text/event-stream"
        reader = SseReader(stream)
        priming = reader.next_event()
        assert priming is not None and priming.get("id") and not (priming["data"] or "").strip()
        second = session.get()
        assert second.status_code == 409
        second.close()

        @srv.tool()
        def added() -> str:
            return "new"

        event = reader.next_event()
        assert event is not None and event.get("id")
        message = json.loads(event["data"])
        assert message == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        validate_message(LEGACY, message)
    finally:
        stream.close()
    assert "added" in {t["name"] for t in session.call("tools/list")["result"]["tools"]}


def test_get_without_event_stream_accept_is_406(url):
    session = LegacySession(url)
    response = requests.get(url, timeout=WAIT, headers={
        "Accept": "application/json", "Mcp-Session-Id": session.session_id})
    assert response.status_code == 406


def test_delete_then_404(url):
    session = LegacySession(url)
    assert session.delete().status_code == 200
    _, response = session.request("tools/list")
    assert response.status_code == 404
    assert session.delete().status_code == 404
    assert session.get().status_code == 404


def test_idle_session_expires(serve):
    with freeze_time("2026-01-01 12:00:00", tick=True) as frozen:
        url = serve(session_idle_timeout=60.0).url
        idle = LegacySession(url)
        active = LegacySession(url)
        frozen.tick(45)
        assert active.call("ping")["result"] == {}
        frozen.tick(45)  # idle: 90 s since its last request; active: 45 s
        _, response = idle.request("tools/list")
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == -32001
        assert active.call("ping")["result"] == {}
        frozen.tick(3600)
        _, response = active.request("ping")
        assert response.status_code == 404


def test_open_get_stream_keeps_a_session_alive(serve):
    with freeze_time("2026-01-01 12:00:00", tick=True) as frozen:
        url = serve(session_idle_timeout=60.0).url
        session = LegacySession(url)
        session.call("ping")
        stream = session.get()
        try:
            assert SseReader(stream).next_event() is not None  # the priming event: attached
            frozen.tick(600)
            assert session.call("ping")["result"] == {}
        finally:
            stream.close()


def test_batches_in_2025_03_26(url):
    session = LegacySession(url, "2025-03-26")
    batch = [{"jsonrpc": "2.0", "id": "a", "method": "tools/call",
              "params": {"name": "echo", "arguments": {"text": "one"}}},
             {"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": "x", "progress": 1}},
             {"jsonrpc": "2.0", "id": "b", "method": "ping"}]
    response = session.post(batch)
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, list)
    by_id = {item["id"]: item for item in body}
    assert set(by_id) == {"a", "b"}
    assert by_id["a"]["result"]["content"][0]["text"] == "one"
    assert by_id["b"]["result"] == {}
    validate("2025-03-26", "JSONRPCBatchResponse", body)
    # A batch of notifications only: 202.
    response = session.post([{"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": "x", "progress": 2}}])
    assert response.status_code == 202


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
def test_batches_refused_after_2025_03_26(url, version):
    session = LegacySession(url, version)
    response = session.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                             {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
    assert response.status_code == 400, response.text
    assert session.call("ping")["result"] == {}


def test_initialize_cannot_be_batched(url):
    response = requests.post(url, timeout=WAIT, headers={"Accept": BOTH}, json=[
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "x", "version": "0"}}}])
    assert response.status_code == 400


# -- resumability (SEP-1699 polling) -------------------------------------------------------


def test_close_sse_stream_then_resume_with_last_event_id(serve):
    srv = Server("resumable")
    gate = threading.Event()
    closed: list[bool] = []

    @srv.tool()
    def reconnect(ctx: HandlerContext) -> str:
        closed.append(ctx.close_sse_stream())
        gate.wait(WAIT)
        return "Reconnection test completed"

    served = serve(srv, retry_ms=250)
    url = served.url
    session = LegacySession(url)
    request_id, response = session.request(
        "tools/call", {"name": "reconnect", "arguments": {}}, stream=True,
        headers={"Accept": "text/event-stream, application/json"})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    reader = SseReader(response)
    priming = reader.next_event()
    assert priming is not None
    assert priming["id"] and priming["retry"] == "250"
    assert not (priming["data"] or "").strip()
    assert reader.next_event() is None, "the POST stream should end after the priming event"
    assert closed == [True]
    gate.set()
    resumed = session.get(headers={"Last-Event-ID": priming["id"]})
    assert resumed.status_code == 200
    messages = SseReader(resumed).messages(request_id)
    assert messages[-1]["id"] == request_id
    assert messages[-1]["result"]["content"][0]["text"] == "Reconnection test completed"
    validate_message(LEGACY, messages[-1], "tools/call")
    resumed.close()
    # The result went out whole: the store lets go of that stream (issue #11), and a
    # later resume from the same id replays nothing (a fresh GET stream: priming first).
    wait_until(lambda: served.app.store.size_bytes == 0, timeout=WAIT,
               message=lambda: served.app.store.size_bytes)
    again = session.get(headers={"Last-Event-ID": priming["id"]})
    assert again.status_code == 200
    first = SseReader(again).next_event()
    again.close()
    assert first is not None and not (first["data"] or "").strip(), first


def test_close_sse_stream_is_false_without_event_store(serve):
    srv = Server("no-store")
    results: list[bool] = []

    @srv.tool()
    def try_close(ctx: HandlerContext) -> str:
        results.append(ctx.close_sse_stream())
        return "done"

    url = serve(srv, event_store=None).url
    session = LegacySession(url)
    assert session.call("tools/call", {"name": "try_close", "arguments": {}})["result"][
        "content"][0]["text"] == "done"
    assert results == [False]


def test_reverse_request_over_the_post_stream(serve):
    srv = Server("asker")

    @srv.tool()
    def ask(ctx: HandlerContext) -> str:
        answer = ctx.elicit("Your name?", {"type": "object",
                                           "properties": {"name": {"type": "string"}}})
        return f"{answer.action}:{(answer.content or {}).get('name')}"

    url = serve(srv).url
    session = LegacySession(url, capabilities={"elicitation": {}})
    request_id, response = session.request("tools/call", {"name": "ask", "arguments": {}},
                                           stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    reader = SseReader(response)
    while True:
        event = reader.next_event()
        assert event is not None, "the stream ended before the elicitation request"
        if event["data"] and event["data"].strip():
            question = json.loads(event["data"])
            break
    assert question["method"] == "elicitation/create"
    validate_message(LEGACY, question)
    reply = session.post({"jsonrpc": "2.0", "id": question["id"],
                          "result": {"action": "accept", "content": {"name": "Ada"}}})
    assert reply.status_code == 202 and reply.content == b""
    messages = reader.messages(request_id)
    assert messages[-1]["result"]["content"][0]["text"] == "accept:Ada"


def test_notification_post_in_session_is_202(url):
    session = LegacySession(url)
    response = session.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": 999}})
    assert response.status_code == 202 and response.content == b""


def test_answer_of_json_for_quick_calls(url):
    session = LegacySession(url)
    request_id, response = session.request("tools/call",
                                           {"name": "echo", "arguments": {"text": "q"}})
    assert response.headers["Content-Type"] == "application/json"
    assert answer_of(response, request_id)["result"]["content"][0]["text"] == "q"
