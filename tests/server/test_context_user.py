"""The ``user`` seam: a framework adapter stores its user on the message's transport
context; a handler reads it as ``ctx.user`` on every transport and era."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsync import Client, HandlerContext, Server, TransportContext, current_transport
from mcpsync.protocol.jsonrpc import Message, Request
from mcpsync.protocol.versions import MODERN_VERSIONS
from tests.helpers import WAIT
from tests.serving import RunningServer


class _User:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"_User({self.name!r})"


def _server() -> Server:
    server = Server("users")

    def adapter(message: Message, next_: Any) -> None:
        # What a framework adapter does: the user of this request into the slot.
        transport = current_transport()
        if transport is not None and isinstance(message, Request):
            name = transport.headers.get("X-User")
            transport.user = _User(name) if name else None
        next_(message)

    server.recv_middleware.append(adapter)

    @server.tool()
    def whoami(ctx: HandlerContext) -> str:
        return "nobody" if ctx.user is None else ctx.user.name

    return server


def test_the_user_slot_is_per_message_and_settable() -> None:
    transport = TransportContext("http", session_id="s", user="alice")
    assert transport.user == "alice"
    fresh = transport.for_message(Request(1, "tools/list", {}))
    assert fresh.user == "alice"
    fresh.user = "bob"
    assert transport.user == "alice"
    assert TransportContext("stdio").user is None
    assert "user='alice'" in repr(transport)


def test_ctx_user_is_none_without_an_adapter() -> None:
    with Client.memory(_server(), timeout=WAIT) as client:
        assert client.call_tool("whoami").text == "nobody"


@pytest.mark.parametrize("version", [MODERN_VERSIONS[0], "2025-11-25"])
def test_ctx_user_over_http_in_both_eras(version: str) -> None:
    app = _server().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version=version, timeout=WAIT,
            headers={"X-User": "alice"}) as client:
        assert client.call_tool("whoami").text == "alice"
