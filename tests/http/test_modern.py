"""2026-07-28 Streamable HTTP on a real socket: raw requests, status codes and bodies."""

from __future__ import annotations

import json
import threading

import pytest
import requests

from mcpsync import HandlerContext, ProtocolOptions, Server
from mcpsync.dispatch.typed import ToolBinding
from mcpsync.protocol.versions import MODERN_VERSIONS
from mcpsync.server.tools import RegisteredTool, describe
from tests.helpers import run_threads
from tests.spec import validate, validate_message

from .raw import (
    BOTH,
    MODERN,
    WAIT,
    SseReader,
    envelope,
    modern_headers,
    modern_request,
    post_modern,
    sse_messages,
)


def error_of(response: requests.Response, status: int, code: int, request_id=1) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["id"] == request_id
    assert body["error"]["code"] == code, body
    validate_message(MODERN, body)
    return body["error"]


def test_quick_call_is_plain_json(url):
    response = post_modern(url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}},
                           request_id="abc")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert "Mcp-Session-Id" not in response.headers
    body = response.json()
    assert body["id"] == "abc"
    assert body["result"]["content"] == [{"type": "text", "text": "hi"}]
    validate_message(MODERN, body)
    validate(MODERN, "CallToolResult", body["result"])


def test_discover_and_list(url):
    body = post_modern(url, "server/discover").json()
    validate(MODERN, "DiscoverResult", body["result"])
    assert MODERN in body["result"]["supportedVersions"]
    listing = post_modern(url, "tools/list", request_id=2).json()
    validate(MODERN, "ListToolsResult", listing["result"])
    assert "echo" in {tool["name"] for tool in listing["result"]["tools"]}


def test_progress_streams_as_sse_before_the_result(url):
    body = modern_request("tools/call", {"name": "progress", "arguments": {"steps": 4}}, 7,
                          meta=envelope(progressToken="tok"))
    response = requests.post(url, data=json.dumps(body), stream=True, timeout=WAIT,
                             headers=modern_headers("tools/call", "progress"))
    with response:
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "text/event-stream"
        assert response.headers["X-Accel-Buffering"] == "no"
        assert "Mcp-Session-Id" not in response.headers
        messages = sse_messages(response, 7)
    for message in messages:
        validate_message(MODERN, message)
    *notes, final = messages
    assert [n["method"] for n in notes] == ["notifications/progress"] * 4
    assert [n["params"]["progress"] for n in notes] == [1, 2, 3, 4]
    assert all(n["params"]["progressToken"] == "tok" for n in notes)
    assert final["id"] == 7 and final["result"]["content"][0]["text"] == "ok"


def test_sse_only_accept_still_gets_sse(url):
    response = post_modern(url, "tools/call", {"name": "echo", "arguments": {"text": "x"}},
                           headers={"Accept": "text/event-stream"}, stream=True)
    with response:
        assert response.headers["Content-Type"] == "text/event-stream"
        assert sse_messages(response, 1)[-1]["result"]["content"][0]["text"] == "x"


@pytest.mark.parametrize(("drop", "override"), [
    ("MCP-Protocol-Version", {}),
    (None, {"MCP-Protocol-Version": "2025-11-25"}),
    ("Mcp-Method", {}),
    (None, {"Mcp-Method": "tools/list"}),
    (None, {"Mcp-Method": "TOOLS/CALL"}),
    ("Mcp-Name", {}),
    (None, {"Mcp-Name": "add"}),
    (None, {"Mcp-Name": "=?base64?ZWNobw?="}),  # bad padding
])
def test_header_mismatch(url, drop, override):
    headers = modern_headers("tools/call", "echo")
    if drop:
        del headers[drop]
    headers.update(override)
    body = modern_request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, 41)
    response = requests.post(url, data=json.dumps(body), headers=headers, timeout=WAIT)
    error_of(response, 400, -32020, 41)


@pytest.mark.parametrize("override", [
    {"Mcp-Method": "tools/call", "Mcp-Name": "echo  "},  # trailing OWS (requests refuses
                                                          # leading whitespace)
    {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?ZWNobw==?="},  # an encoded name
    {"mcp-method": "tools/call", "mcp-name": "echo"},  # names are case-insensitive
    {"MCP-METHOD": "tools/call", "MCP-NAME": "echo"},
])
def test_header_variants_accepted(url, override):
    headers = modern_headers("tools/call")
    del headers["Mcp-Method"]
    headers.update(override)
    body = modern_request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    response = requests.post(url, data=json.dumps(body), headers=headers, timeout=WAIT)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "x"


def test_header_mismatch_on_resources_read(url):
    body = modern_request("resources/read", {"uri": "test://doc"}, 3)
    response = requests.post(url, data=json.dumps(body), timeout=WAIT,
                             headers=modern_headers("resources/read", "test://other"))
    error_of(response, 400, -32020, 3)


@pytest.mark.parametrize("meta", [
    None,
    {"io.modelcontextprotocol/protocolVersion": MODERN},  # no clientCapabilities
    {"io.modelcontextprotocol/clientCapabilities": {}},    # no protocolVersion
])
def test_missing_meta_is_invalid_params(url, meta):
    params = {} if meta is None else {"_meta": meta}
    body = {"jsonrpc": "2.0", "id": 9, "method": "server/discover", "params": params}
    response = requests.post(url, data=json.dumps(body), timeout=WAIT,
                             headers=modern_headers("server/discover"))
    error_of(response, 400, -32602, 9)


def test_no_client_info_is_served(url):
    meta = envelope()
    del meta["io.modelcontextprotocol/clientInfo"]
    body = modern_request("server/discover", meta=meta)
    response = requests.post(url, data=json.dumps(body), timeout=WAIT,
                             headers=modern_headers("server/discover"))
    assert response.status_code == 200 and "result" in response.json()


def test_unsupported_version(url):
    body = modern_request("server/discover", request_id=5,
                          meta=envelope(version="v999.0.0"))
    response = requests.post(url, data=json.dumps(body), timeout=WAIT,
                             headers=modern_headers("server/discover", version="v999.0.0"))
    error = error_of(response, 400, -32022, 5)
    assert error["data"]["requested"] == "v999.0.0"
    assert MODERN in error["data"]["supported"]
    validate(MODERN, "UnsupportedProtocolVersionError", response.json())


def test_version_header_differs_from_body(url):
    body = modern_request("server/discover", request_id=6, meta=envelope(version="v999.0.0"))
    response = requests.post(url, data=json.dumps(body), timeout=WAIT,
                             headers=modern_headers("server/discover"))
    error_of(response, 400, -32020, 6)


@pytest.mark.parametrize("method", ["unknown/method", "initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe"])
def test_unknown_and_removed_methods(url, method):
    params = {"uri": "test://doc"} if method.startswith("resources/") else {}
    if method == "logging/setLevel":
        params = {"level": "debug"}
    response = post_modern(url, method, params, request_id=f"m-{method}")
    error_of(response, 404, -32601, f"m-{method}")


def test_missing_client_capability_is_400(serve):
    srv = Server("caps", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))

    @srv.tool()
    def needs_sampling(ctx: HandlerContext) -> str:
        return ctx.sample("hi", max_tokens=5).text  # type: ignore[attr-defined]

    url = serve(srv).url
    response = post_modern(url, "tools/call", {"name": "needs_sampling", "arguments": {}})
    error = error_of(response, 400, -32021)
    assert isinstance(error["data"]["requiredCapabilities"]["sampling"], dict)


def test_notification_is_202_empty(url):
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "_meta": envelope()}}
    response = requests.post(url, data=json.dumps(body), timeout=WAIT,
                             headers=modern_headers("notifications/cancelled"))
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
def test_get_and_delete_without_session_are_405(url, verb):
    response = requests.request(verb, url, timeout=WAIT, headers={
        "Accept": "text/event-stream", "MCP-Protocol-Version": MODERN})
    assert response.status_code == 405
    assert "POST" in response.headers.get("Allow", "")


def test_session_id_is_ignored(url):
    response = post_modern(url, "tools/list", headers={"Mcp-Session-Id": "whatever"})
    assert response.status_code == 200 and "result" in response.json()
    assert "Mcp-Session-Id" not in response.headers


def test_concurrent_streams(url):
    def one(i: int) -> dict:
        response = post_modern(url, "tools/call", {"name": "progress", "arguments": {"steps": 2}},
                               request_id=1000 + i)
        return response.json() if response.headers["Content-Type"].startswith(
            "application/json") else sse_messages(response, 1000 + i)[-1]

    results = dict(enumerate(run_threads(one, 3, name="t-conc", timeout=WAIT)))
    assert sorted(results) == [0, 1, 2]
    assert all(results[i]["id"] == 1000 + i and "result" in results[i] for i in results)


# -- cancellation by closing the stream ----------------------------------------------------


def test_closing_the_stream_cancels_the_handler(serve):
    srv = Server("cancel", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    started = threading.Event()
    saw_cancel = threading.Event()

    @srv.tool()
    def wait_for_cancel(ctx: HandlerContext) -> str:
        ctx.cancelled.add_callback(saw_cancel.set)  # type: ignore[attr-defined]
        started.set()
        ctx.cancelled.wait(WAIT)
        return "not cancelled"

    url = serve(srv, keepalive_interval=0.05, json_window=0.05).url
    response = post_modern(url, "tools/call", {"name": "wait_for_cancel", "arguments": {}},
                           stream=True)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert started.wait(WAIT)
    assert not saw_cancel.is_set()
    response.close()
    assert saw_cancel.wait(WAIT), "closing the SSE response did not cancel the handler"
    # And the server keeps serving.
    assert post_modern(url, "tools/list").status_code == 200


# -- Mcp-Param-* ---------------------------------------------------------------------------

REGION_SCHEMA = {"type": "object", "required": ["region"], "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "count": {"type": "integer", "x-mcp-header": "Count"}}}


def header_server() -> Server:
    srv = Server("headers", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))

    def regional(region: str, count: int | None = None) -> str:
        """Echo the region."""
        return f"region={region} count={count}"

    binding = ToolBinding.from_function(regional, context_type=HandlerContext)
    wire = describe(binding)
    wire["inputSchema"] = REGION_SCHEMA
    srv.tools.add(RegisteredTool(binding, wire))
    return srv


@pytest.mark.parametrize(("header", "region", "ok"), [
    ("=?base64?SGVsbG8=?=", "Hello", True),
    ("=?base64?SGVsbG8?=", "Hello", False),
    ("=?base64?SGVs!!!bG8=?=", "Hello", False),
    ("SGVsbG8=", "SGVsbG8=", True),
    ("=?base64?SGVsbG8=", "=?base64?SGVsbG8=", True),
    (None, "test-value", False),
    ("us-west1", "us-east1", False),
    ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", True),
])
def test_mcp_param_validation(serve, header, region, ok):
    url = serve(header_server()).url
    headers = {} if header is None else {"Mcp-Param-Region": header}
    response = post_modern(url, "tools/call", {"name": "regional",
                                                "arguments": {"region": region}},
                           headers=headers)
    if ok:
        assert response.status_code == 200, response.text
        assert response.json()["result"]["content"][0]["text"] == f"region={region} count=None"
    else:
        error_of(response, 400, -32020)


def test_mcp_param_integer(serve):
    url = serve(header_server()).url
    arguments = {"region": "r", "count": 3}
    ok = post_modern(url, "tools/call", {"name": "regional", "arguments": arguments},
                     headers={"Mcp-Param-Region": "r", "Mcp-Param-Count": "3"})
    assert ok.status_code == 200 and "count=3" in ok.json()["result"]["content"][0]["text"]
    bad = post_modern(url, "tools/call", {"name": "regional", "arguments": arguments},
                      headers={"Mcp-Param-Region": "r", "Mcp-Param-Count": "4"})
    error_of(bad, 400, -32020)


def test_tools_list_advertises_the_annotation(serve):
    url = serve(header_server()).url
    tools = post_modern(url, "tools/list").json()["result"]["tools"]
    assert tools[0]["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"


def test_sse_reader_sanity(url):
    # The raw reader used above sees the same result as requests' own JSON decoding.
    response = post_modern(url, "tools/call", {"name": "progress", "arguments": {"steps": 1}},
                           stream=True, headers={"Accept": BOTH})
    with response:
        if response.headers["Content-Type"] == "text/event-stream":
            assert SseReader(response).messages(1)[-1]["result"]["content"][0]["text"] == "ok"
        else:
            assert response.json()["result"]["content"][0]["text"] == "ok"


def test_a_departed_client_is_noticed_before_the_next_keepalive(serve):
    # werkzeug exposes the connection's socket: the quiet stream sees EOF within about
    # half a second, although its keep-alive comment is a minute away.
    srv = Server("departed", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    started = threading.Event()
    saw_cancel = threading.Event()

    @srv.tool()
    def wait_for_cancel(ctx: HandlerContext) -> str:
        started.set()
        if ctx.cancelled.wait(WAIT):
            saw_cancel.set()
        return "not cancelled"

    url = serve(srv, keepalive_interval=60.0, json_window=0.05).url
    response = post_modern(url, "tools/call", {"name": "wait_for_cancel", "arguments": {}},
                           stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    assert started.wait(WAIT)
    response.raw._fp.fp.raw._sock.shutdown(2)  # the client goes away without a word
    response.close()
    assert saw_cancel.wait(5.0), "the handler was not cancelled before the keep-alive"
