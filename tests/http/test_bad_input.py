"""Bad HTTP input: each gets a proper answer, and the server keeps serving afterwards."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urljoin

import pytest
import requests

from mcpsync.protocol.jsonrpc import MAX_DEPTH
from mcpsync.protocol.versions import META_LOG_LEVEL
from tests.server.hardening_server import server as hardening_server
from tests.spec import validate_message

from .raw import (
    MODERN,
    WAIT,
    LegacySession,
    SseReader,
    answer_of,
    envelope,
    modern_headers,
    modern_request,
    post_modern,
)


def still_serving(url: str, **headers: str) -> None:
    response = post_modern(url, "tools/call", {"name": "echo", "arguments": {"text": "ok"}},
                           request_id="after", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "ok"


def json_error(response: requests.Response, status: int, code: int | None = None,
               request_id=None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert "error" in body and body["id"] == request_id
    if code is not None:
        assert body["error"]["code"] == code
    validate_message(MODERN, body)
    return body


@pytest.mark.parametrize("payload", [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "meth',
                                     b"\xff\xfe\x00garbage"])
def test_malformed_json(url, payload):
    response = requests.post(url, data=payload, headers=modern_headers("tools/list"),
                             timeout=WAIT)
    json_error(response, 400, -32700, None)
    still_serving(url)


def test_empty_body(url):
    response = requests.post(url, data=b"", headers=modern_headers("tools/list"), timeout=WAIT)
    assert response.status_code == 400
    still_serving(url)


def test_wrong_content_type(url):
    body = json.dumps(modern_request("tools/list"))
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        response = requests.post(url, data=body, timeout=WAIT, headers={
            **modern_headers("tools/list"), "Content-Type": content_type})
        assert response.status_code == 415, response.text
    # Parameters on the media type are fine.
    response = requests.post(url, data=body, timeout=WAIT, headers={
        **modern_headers("tools/list"), "Content-Type": "application/json; charset=utf-8"})
    assert response.status_code == 200
    still_serving(url)


def test_not_acceptable(url):
    body = json.dumps(modern_request("tools/list"))
    response = requests.post(url, data=body, timeout=WAIT, headers={
        **modern_headers("tools/list"), "Accept": "text/html"})
    assert response.status_code == 406, response.text
    # JSON alone is acceptable: the answer is then always JSON.
    response = requests.post(url, data=json.dumps(modern_request(
        "tools/call", {"name": "progress", "arguments": {"steps": 3}})), timeout=WAIT,
        headers={**modern_headers("tools/call", "progress"), "Accept": "application/json"})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "ok"
    still_serving(url)


def test_body_too_large_with_content_length(serve):
    url = serve(max_body_bytes=2000).url
    body = json.dumps(modern_request("tools/call", {"name": "echo",
                                                    "arguments": {"text": "x" * 5000}}))
    response = requests.post(url, data=body, headers=modern_headers("tools/call", "echo"),
                             timeout=WAIT)
    json_error(response, 413)
    small = json.dumps(modern_request("tools/call", {"name": "echo",
                                                     "arguments": {"text": "x" * 100}}))
    response = requests.post(url, data=small, headers=modern_headers("tools/call", "echo"),
                             timeout=WAIT)
    assert response.status_code == 200
    still_serving(url)


def test_body_too_large_chunked(serve):
    url = serve(max_body_bytes=2000).url
    body = json.dumps(modern_request("tools/call", {"name": "echo",
                                                    "arguments": {"text": "y" * 5000}})).encode()

    def chunks():
        for i in range(0, len(body), 500):
            yield body[i:i + 500]

    response = requests.post(url, data=chunks(), headers=modern_headers("tools/call", "echo"),
                             timeout=WAIT)
    assert response.request.headers.get("Transfer-Encoding") == "chunked"
    json_error(response, 413)
    # A small chunked body is read to its end and served.
    small = json.dumps(modern_request("tools/call", {"name": "echo",
                                                     "arguments": {"text": "tiny"}})).encode()
    response = requests.post(url, data=iter([small[:10], small[10:]]), timeout=WAIT,
                             headers=modern_headers("tools/call", "echo"))
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "tiny"
    still_serving(url)


@pytest.mark.parametrize("headers", [
    {"Host": "evil.example.com"},
    {"Origin": "http://evil.example.com"},
    {"Host": "evil.example.com", "Origin": "http://evil.example.com"},
    {"Origin": "null"},
    {"Host": "127.0.0.1.evil.example.com"},
    {"Origin": "http://localhost.evil.example.com"},
])
def test_hostile_host_or_origin(served, headers):
    response = post_modern(served.url, "server/discover", headers=headers)
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] < 0
    still_serving(served.url)
    # GET and DELETE are checked too.
    assert requests.get(served.url, headers=headers, timeout=WAIT).status_code == 403


def test_localhost_accepted(served):
    port = served.base.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        for origin in (None, f"http://{host}", f"https://{host}"):
            headers = {"Host": host}
            if origin:
                headers["Origin"] = origin
            response = post_modern(served.url, "server/discover", headers=headers)
            assert response.status_code == 200, (headers, response.text)


def test_allow_lists(serve):
    served = serve(allowed_hosts=["mcp.example.com", "*.internal.example", "api.example:8443"],
                   allowed_origins=["https://app.example.com"])
    ok = [
        {"Host": "mcp.example.com"},
        {"Host": "mcp.example.com:9999"},
        {"Host": "a.internal.example"},
        {"Host": "api.example:8443"},
        {"Host": "mcp.example.com", "Origin": "https://app.example.com"},
        {"Host": "mcp.example.com", "Origin": "https://mcp.example.com"},  # an allowed host
    ]
    refused = [
        {"Host": "127.0.0.1"},                  # the allow-list replaces the loopback default
        {"Host": "api.example:8080"},
        {"Host": "internal.example.evil"},
        {"Host": "mcp.example.com", "Origin": "https://evil.example.com"},
    ]
    for headers in ok:
        assert post_modern(served.url, "server/discover", headers=headers).status_code == 200, (
            headers)
    for headers in refused:
        assert post_modern(served.url, "server/discover", headers=headers).status_code == 403, (
            headers)
    star = serve(allowed_hosts=["*"], allowed_origins=["*"])
    response = post_modern(star.url, "server/discover", headers={
        "Host": "anything.example", "Origin": "https://whatever.example"})
    assert response.status_code == 200


def test_unknown_session_id(url):
    body = {"jsonrpc": "2.0", "id": 12, "method": "tools/list"}
    response = requests.post(url, data=json.dumps(body), timeout=WAIT, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": "no-such-session", "MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 404
    assert response.json()["id"] == 12
    for verb in ("GET", "DELETE"):
        response = requests.request(verb, url, timeout=WAIT, headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": "no-such-session"})
        assert response.status_code == 404, verb
    still_serving(url)


def test_array_in_modern_era(url):
    body = [modern_request("tools/list", request_id=1), modern_request("tools/list",
                                                                       request_id=2)]
    response = requests.post(url, data=json.dumps(body), headers=modern_headers("tools/list"),
                             timeout=WAIT)
    assert response.status_code == 400, response.text
    assert "error" in response.json()
    still_serving(url)


def test_wrong_path_and_verb(url, served):
    response = requests.post(served.base + "/elsewhere", data=json.dumps(
        modern_request("tools/list")), headers=modern_headers("tools/list"), timeout=WAIT)
    assert response.status_code == 404
    response = requests.put(url, data=b"{}", timeout=WAIT)
    assert response.status_code == 405
    still_serving(url)


def test_response_posted_without_session_is_refused(url):
    body = {"jsonrpc": "2.0", "id": 1, "result": {}}
    response = requests.post(url, data=json.dumps(body), headers=modern_headers("tools/list"),
                             timeout=WAIT)
    assert 400 <= response.status_code < 500
    still_serving(url)


# -- issue #11: hostile values, on every HTTP endpoint ------------------------------------


class _Peer:
    """A raw client of one endpoint: ``post(body, request_id)`` gives the answer with that
    id (``None``: an answer to an unreadable message)."""

    def call(self, request_id: Any, method: str, params: dict[str, Any] | None = None
             ) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = self.params(params)
        return self.post(json.dumps(body).encode(), request_id, method, params)

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        return params

    def post(self, data: bytes, request_id: Any, method: str = "ping",
             params: dict[str, Any] | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _Modern(_Peer):
    def __init__(self, url: str) -> None:
        self.url = url

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        # The per-request envelope (with log messages on), plus the test's own _meta keys.
        meta = envelope(**{META_LOG_LEVEL: "debug"})
        meta.update(params.get("_meta") or {})
        return {**params, "_meta": meta}

    def post(self, data, request_id, method="ping", params=None):
        name = (params or {}).get("name")
        headers = modern_headers(method, name if isinstance(name, str) else None)
        response = requests.post(self.url, data=data, headers=headers, timeout=WAIT)
        assert response.status_code in (200, 400), (response.status_code, response.text)
        return answer_of(response, request_id)


class _Legacy(_Peer):
    def __init__(self, url: str) -> None:
        self.session = LegacySession(url)

    def post(self, data, request_id, method="ping", params=None):
        response = requests.post(self.session.url, data=data, headers=self.session.headers(),
                                 timeout=WAIT)
        assert response.status_code in (200, 400), (response.status_code, response.text)
        return answer_of(response, request_id)

    def close(self) -> None:
        self.session.delete()


class _OldSse(_Peer):
    """2024-11-05 HTTP+SSE: POSTs to /messages, every answer on the GET stream."""

    def __init__(self, base: str) -> None:
        self.stream = requests.get(base + "/sse", headers={"Accept": "text/event-stream"},
                                   stream=True, timeout=WAIT)
        self.reader = SseReader(self.stream)
        endpoint = self.reader.next_event()
        assert endpoint is not None and endpoint["event"] == "endpoint"
        self.post_url = urljoin(base + "/sse", endpoint["data"])
        self.call(0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                    "clientInfo": {"name": "old", "version": "0"}})
        requests.post(self.post_url, json={"jsonrpc": "2.0",
                                           "method": "notifications/initialized"},
                      timeout=WAIT)

    def post(self, data, request_id, method="ping", params=None):
        response = requests.post(self.post_url, data=data, timeout=WAIT,
                                 headers={"Content-Type": "application/json"})
        assert response.status_code == 202, response.text
        while True:
            event = self.reader.next_event()
            assert event is not None, "the stream ended"
            message: dict[str, Any] = json.loads(event["data"])
            if "method" not in message:
                assert message["id"] == request_id, message
                return message

    def close(self) -> None:
        self.stream.close()


@pytest.fixture(params=["modern", "legacy", "2024-11-05"])
def peer(request, serve):
    served = serve(hardening_server)
    made: _Peer = (_Modern(served.url) if request.param == "modern"
                   else _Legacy(served.url) if request.param == "legacy"
                   else _OldSse(served.base))
    yield made
    made.close()


def _nested_list(request_id: int, levels: int) -> bytes:
    """A tools/list whose params hold ``levels`` arrays inside one another: the message
    nests ``levels + 2`` deep."""
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"x":' % request_id
            + b"[" * levels + b"]" * levels + b"}}")


def test_deep_nesting_is_refused_on_every_endpoint(peer):
    reply = peer.post(_nested_list(1, 1000), 1, "tools/list")
    assert reply["error"]["code"] == -32600  # deeper than the parser goes: werkzeug's 500
    reply = peer.post(b'{"x":' * 5000, None, "tools/list")
    assert reply["error"]["code"] == -32700  # and not JSON at all
    reply = peer.post(_nested_list(2, MAX_DEPTH - 1), 2, "tools/list")
    assert reply["error"]["code"] == -32600
    x: list[Any] = []
    for _ in range(MAX_DEPTH - 3):  # the limit: message, params, x's own list, then these
        x = [x]
    assert "tools" in peer.call(3, "tools/list", {"x": x})["result"]
    assert "tools" in peer.call(4, "tools/list", {})["result"]


def test_unencodable_answers_become_errors_on_every_endpoint(peer):
    reply = peer.call(1, "tools/call", {"name": "echo", "arguments": {"text": "a\ud800"}})
    assert reply["result"]["isError"] is True
    assert "surrogate" in reply["result"]["content"][0]["text"]
    reply = peer.call(2, "tools/call", {"name": "refuse", "arguments": {"text": "x\ud800"}})
    assert reply["error"] == {"code": -32602, "message": "x\\ud800"}
    reply = peer.call(3, "tools/call", {"name": "not_a_number"})
    if reply["result"].get("isError") is not True:
        # 2024-11-05 has no structuredContent: only the text "nan"
        assert "structuredContent" not in reply["result"]
    reply = peer.call(4, "tools/call", {"name": "say", "arguments": {"text": "\udfff"}})
    assert reply["result"]["isError"] is True
    reply = peer.call("\ud800", "tools/list", {})
    assert reply["id"] == "\ud800" and "result" in reply
    assert "result" in peer.call(5, "tools/list", {})


def test_duplicate_in_flight_surrogate_id_is_refused_and_the_session_lives(serve):
    served = serve(hardening_server)
    session = LegacySession(served.url)
    first = session.post({"jsonrpc": "2.0", "id": "\udbff", "method": "tools/call",
                          "params": {"name": "nap", "arguments": {"seconds": 60}}},
                         stream=True)
    try:
        reply = answer_of(session.post({"jsonrpc": "2.0", "id": "\udbff", "method": "ping"}),
                          "\udbff")
        assert reply["error"]["code"] == -32600
        assert session.call("ping")["result"] == {}
    finally:
        session.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": "\udbff"}})
        first.close()
        session.delete()


def test_bad_params_are_invalid_params_on_every_endpoint(peer):
    cursor = base64.urlsafe_b64encode(b"mcpsync:" + b"1" * 5000).decode()
    bad: list[tuple[str, dict[str, Any]]] = [
        ("tools/list", {"cursor": cursor}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "name", "value": "A"},
                                 "context": {"arguments": [1]}}),
        ("tools/call", {"name": "echo", "arguments": {"text": "a"},
                        "_meta": {"progressToken": [1]}}),
    ]
    for number, (method, params) in enumerate(bad, 1):
        reply = peer.call(number, method, params)
        assert reply["error"]["code"] == -32602, (method, reply)
