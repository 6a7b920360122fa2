"""The one check of a 2026-07-28 envelope (``protocol/envelope.py``): pure, each refusal
with the spec's code; and, over a real HTTP server, a refused envelope is answered at the
door (400) before the receive middleware or a handler thread sees the request."""

from __future__ import annotations

import json

import pytest
import requests

from mcpsync import Server
from mcpsync.errors import MCPError
from mcpsync.protocol.envelope import Envelope, check_envelope
from tests.http.raw import envelope, modern_headers, modern_request
from tests.serving import RunningServer

MODERN = "2026-07-28"
VERSION = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
LEVEL = "io.modelcontextprotocol/logLevel"
SUPPORTED = (MODERN,)


def _headers(method: str = "tools/list", name: str | None = None) -> dict[str, str]:
    return {k.lower(): v for k, v in modern_headers(method, name).items()}


def test_a_valid_envelope_says_what_the_request_is_served_with():
    params = {"_meta": envelope(**{LEVEL: "info"})}
    checked = check_envelope("tools/list", params, SUPPORTED, headers=_headers())
    assert checked == Envelope(MODERN, {}, {"name": "raw-test", "version": "0"}, "info")
    # Off HTTP there are no headers to compare; a client info that is no object is None.
    params = {"_meta": {VERSION: MODERN, CAPS: {"sampling": {}},
                        "io.modelcontextprotocol/clientInfo": "me"}}
    assert check_envelope("ping", params, SUPPORTED) == Envelope(
        MODERN, {"sampling": {}}, None, None)


@pytest.mark.parametrize(("params", "headers", "code", "fragment"), [
    ({}, None, -32602, "protocolVersion"),
    ({"_meta": {VERSION: 7, CAPS: {}}}, None, -32602, "protocolVersion"),
    ({"_meta": {VERSION: MODERN}}, None, -32602, "clientCapabilities"),
    ({"_meta": envelope(**{LEVEL: "loud"})}, None, -32602, "log level"),
    ({"_meta": envelope(**{VERSION: "2099-01-01"})}, None, -32022, "Unsupported"),
    ({"_meta": envelope()}, {"mcp-method": "tools/list"}, -32020, "MCP-Protocol-Version"),
    ({"_meta": envelope()}, {**_headers(), "mcp-protocol-version": "2025-11-25"}, -32020,
     "does not match"),
    ({"_meta": envelope()}, {**_headers(), "mcp-method": "tools/call"}, -32020, "Mcp-Method"),
])
def test_each_refusal_has_the_spec_code(params, headers, code, fragment):
    with pytest.raises(MCPError) as refused:
        check_envelope("tools/list", params, SUPPORTED, headers=headers)
    assert refused.value.code == code and fragment in refused.value.message


def test_an_unsupported_version_names_what_is_supported():
    with pytest.raises(MCPError) as refused:
        check_envelope("tools/list", {"_meta": envelope(**{VERSION: "2099-01-01"})},
                       SUPPORTED)
    assert refused.value.data == {"supported": [MODERN], "requested": "2099-01-01"}


def test_the_target_header_is_checked_with_the_envelope():
    params = {"name": "add", "_meta": envelope()}
    assert check_envelope("tools/call", params, SUPPORTED,
                          headers=_headers("tools/call", "add")).version == MODERN
    with pytest.raises(MCPError) as refused:
        check_envelope("tools/call", params, SUPPORTED, headers=_headers("tools/call", "sub"))
    assert refused.value.code == -32020


@pytest.mark.parametrize(("meta", "code"), [
    (envelope(**{LEVEL: "loud"}), -32602),
    (envelope(**{VERSION: "2099-01-01"}), -32022),
])
def test_on_http_a_refused_envelope_never_reaches_the_middleware(meta, code):
    server = Server("door")
    seen: list[str] = []

    def receive(message, next_):
        seen.append(getattr(message, "method", "?"))
        next_(message)

    server.recv_middleware.append(receive)
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        body = json.dumps(modern_request("tools/list", {}, meta=meta))
        headers = modern_headers("tools/list", version=meta[VERSION])
        refused = requests.post(url, data=body, headers=headers, timeout=30)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == code
        assert refused.json()["id"] == 1
        good = requests.post(url, data=json.dumps(modern_request("tools/list", {})),
                             headers=modern_headers("tools/list"), timeout=30)
        assert good.status_code == 200 and "tools" in good.json()["result"]
    assert seen == ["tools/list"]  # only the good one
