"""Bad HTTP input: each gets a proper answer, and the server keeps serving afterwards."""

from __future__ import annotations

import json

import pytest
import requests

from tests.spec import validate_message

from .raw import MODERN, WAIT, modern_headers, modern_request, post_modern


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
