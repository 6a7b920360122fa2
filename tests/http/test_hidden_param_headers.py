"""A tool hidden from its caller (``permission=``, ``server.disable``) that declares
``Mcp-Param-*`` headers is answered exactly like an unknown tool whatever headers come with
the call: a header refusal (400, -32020) would tell the caller the tool exists. The caller
who can see it still gets the refusal. Real HTTP, the wire answers compared byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import requests

from mcpsync import HandlerContext, Server
from tests.http.raw import post_modern
from tests.server.visibility_server import USERS, build
from tests.serving import RunningServer

SCHEMA = {"type": "object", "required": ["region"], "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"}}}


def _server() -> Server:
    server = build()

    @server.tool(permission="shop.issue_refund", input_schema=SCHEMA)
    def regional(**arguments: Any) -> str:
        """Echo the region (for the permitted only)."""
        return f"region={arguments['region']}"

    @server.tool(input_schema=SCHEMA)
    def zoned(**arguments: Any) -> str:
        """Echo the region (disabled for everyone below)."""
        return f"region={arguments['region']}"

    server.disable("zoned")
    return server


def _wire(response: requests.Response, name: str) -> tuple[int, str, str]:
    """Status, content type and body, with the tool's name masked."""
    return (response.status_code, response.headers.get("Content-Type", ""),
            response.text.replace(json.dumps(name)[1:-1], "?"))


def test_a_hidden_tools_bad_param_header_is_answered_as_an_unknown_tool() -> None:
    app = _server().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"

        def call(name: str, user: str, region_header: str | None) -> requests.Response:
            headers = {"X-User": user}
            if region_header is not None:
                headers["Mcp-Param-Region"] = region_header
            return post_modern(url, "tools/call",
                               {"name": name, "arguments": {"region": "eu-1"}},
                               headers=headers)

        for hidden, user in (("regional", "bob"), ("zoned", "bob"), ("zoned", "alice")):
            for header in ("us-west1", None, "eu-1"):  # forged, missing, correct
                answer = _wire(call(hidden, user, header), hidden)
                unknown = _wire(call("nosuchtool", user, header), "nosuchtool")
                assert answer == unknown, (hidden, user, header)
                assert answer[0] == 200 and "Unknown tool: ?" in answer[2]

        # the caller who sees the tool: served with the right header, refused without
        assert "region=eu-1" in call("regional", "alice", "eu-1").text
        for header in ("us-west1", None):
            refused = call("regional", "alice", header)
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == -32020


def test_through_a_mount_the_mounted_servers_visibility_decides_the_same_way() -> None:
    child = _server()
    parent = Server("front")

    @parent.request_scope
    def adapter(ctx: HandlerContext) -> Iterator[None]:
        ctx.transport.user = USERS.get(str(ctx.transport.headers.get("x-user")))
        yield

    parent.mount(child, "shop")
    app = parent.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"

        def call(name: str, user: str, region_header: str | None) -> requests.Response:
            headers = {"X-User": user}
            if region_header is not None:
                headers["Mcp-Param-Region"] = region_header
            return post_modern(url, "tools/call",
                               {"name": name, "arguments": {"region": "eu-1"}},
                               headers=headers)

        for header in ("us-west1", None, "eu-1"):
            answer = _wire(call("shop_regional", "bob", header), "shop_regional")
            assert answer == _wire(call("shop_nosuch", "bob", header), "shop_nosuch"), header
        assert "region=eu-1" in call("shop_regional", "alice", "eu-1").text
        for header in ("us-west1", None):
            refused = call("shop_regional", "alice", header)
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == -32020
