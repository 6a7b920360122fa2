"""2024-11-05 HTTP+SSE, served beside Streamable HTTP: raw, and through Client.http."""

from __future__ import annotations

import json
from urllib.parse import urljoin

import requests

from mcpsync import Client
from tests.spec import validate

from .raw import BOTH, WAIT, SseReader


def test_endpoint_event_then_answers_as_message_events(served):
    stream = requests.get(served.base + "/sse", headers={"Accept": "text/event-stream"},
                          stream=True, timeout=WAIT)
    try:
        assert stream.status_code == 200
        assert stream.headers["Content-Type"] == "text/event-stream"
        reader = SseReader(stream)
        endpoint = reader.next_event()
        assert endpoint is not None and endpoint["event"] == "endpoint"
        assert endpoint["data"].startswith("/messages?session_id=")
        post_url = urljoin(served.base + "/sse", endpoint["data"])
        reply = requests.post(post_url, timeout=WAIT, headers={"Content-Type": "application/json"},
                              data=json.dumps({
                                  "jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                             "clientInfo": {"name": "old", "version": "0"}}}))
        assert reply.status_code == 202
        event = reader.next_event()
        assert event is not None and event["event"] == "message"
        answer = json.loads(event["data"])
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == "2024-11-05"
        validate("2025-03-26", "InitializeResult", answer["result"])  # no 2024 schema here
        assert requests.post(post_url, json={"jsonrpc": "2.0",
                                             "method": "notifications/initialized"},
                             timeout=WAIT).status_code == 202
        assert requests.post(post_url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                             "params": {"name": "echo",
                                                        "arguments": {"text": "old"}}},
                             timeout=WAIT).status_code == 202
        event = reader.next_event()
        assert event is not None and event["event"] == "message"
        assert json.loads(event["data"])["result"]["content"][0]["text"] == "old"
    finally:
        stream.close()


def test_post_to_unknown_legacy_session_is_404(served):
    response = requests.post(served.base + "/messages?session_id=nope", timeout=WAIT,
                             json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 404


def test_client_falls_back_to_http_sse(served):
    url = served.base + "/sse"
    # The SSE path is the old transport's alone: a POST there is refused (405, no modern
    # error code), which is what sends a client on to GET it.
    probe = requests.post(url, data=b"{}", headers={"Content-Type": "application/json",
                                                    "Accept": BOTH}, timeout=WAIT)
    assert probe.status_code == 405 and probe.headers["Allow"] == "GET"
    with Client.http(url, timeout=WAIT) as client:
        # The HTTP+SSE transport carries whatever version the handshake settles on.
        assert client.protocol_version == "2025-11-25"
        sessions = served.app.sessions.all()
        assert len(sessions) == 1 and sessions[0].legacy_sse
        assert "echo" in {tool.name for tool in client.list_tools()}
        assert client.call_tool("echo", {"text": "via sse"}).text == "via sse"
        seen = []
        result = client.call_tool("progress", {"steps": 3}, on_progress=seen.append)
        assert result.text == "ok"
        assert [p.progress for p in seen] == [1, 2, 3]


def test_sse_path_stays_the_old_transport_when_every_path_is_the_endpoint(serve):
    # path=None (as under a framework mount) makes every path the MCP endpoint, except the
    # two HTTP+SSE ones: a client pointed at .../sse must not end up in a Streamable HTTP
    # session there, whose GET stream would then be the old transport's.
    served = serve(path=None)
    probe = requests.post(served.base + "/sse", timeout=WAIT, headers={"Accept": BOTH},
                          json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert probe.status_code == 405
    with Client.http(served.base + "/sse", protocol_version="2024-11-05",
                     timeout=WAIT) as client:
        assert client.protocol_version == "2024-11-05"
        sessions = served.app.sessions.all()
        assert len(sessions) == 1 and sessions[0].legacy_sse
        assert client.call_tool("echo", {"text": "a"}).text == "a"
        assert client.call_tool("echo", {"text": "b"}).text == "b"
