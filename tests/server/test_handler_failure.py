"""Every handler's failure has one wire policy (protocol/tool_outcome.py): a completer's or a
raw ``method_handler``'s exception is answered -32603 "an internal error occurred" with the
request id, its traceback logged once under the same id; its text reaches the wire only
with ``ProtocolOptions(expose_tool_errors=True)``. As for tools, resources and prompts; on
memory and over HTTP, in both eras."""

from __future__ import annotations

import contextlib
import logging
import re

import pytest

from mcpsync import Client, MCPError, ProtocolOptions, Server
from tests.helpers import WAIT
from tests.serving import RunningServer

SECRET = "password=hunter2 at db.internal:5432"


def _server(expose: bool) -> Server:
    server = Server("failing", protocol=ProtocolOptions(expose_tool_errors=expose))

    @server.prompt()
    def greet(who: str) -> str:
        return f"hello {who}"

    @server.completer("greet", "who")
    def names(value: str, context: dict[str, str]) -> list[str]:
        raise RuntimeError(SECRET)

    @server.method_handler("x/lookup")
    def lookup(ctx, params):
        raise KeyError(SECRET)

    return server


@contextlib.contextmanager
def _client(kind: str, server: Server, version: str):
    if kind == "memory":
        with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
            yield client
        return
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version=version, timeout=WAIT) as client:
        yield client


TRANSPORTS = [("memory", "2025-11-25"), ("memory", "2026-07-28"),
              ("http", "2025-11-25"), ("http", "2026-07-28")]


@pytest.mark.parametrize(("kind", "version"), TRANSPORTS)
def test_a_completer_or_raw_handler_that_raises_is_a_32603_with_the_request_id(
        kind: str, version: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcpsync"), \
            _client(kind, _server(False), version) as client:
        with pytest.raises(MCPError) as completed:
            client.complete("greet", "who", "a")
        with pytest.raises(MCPError) as raw:
            client.request("x/lookup", {})
    for caught, method in [(completed, "completion/complete"), (raw, "x/lookup")]:
        error = caught.value
        assert error.code == -32603
        assert "hunter2" not in error.message and "KeyError" not in error.message
        found = re.fullmatch(rf"Error in {re.escape(method)}: an internal error occurred "
                             r"\(request (.+)\)", error.message)
        assert found, error.message
        # The log has the exception and its traceback, once, under the same request id.
        logged = [r for r in caplog.records if r.exc_info and method in r.getMessage()]
        assert len(logged) == 1, [r.getMessage() for r in caplog.records]
        assert SECRET in str(logged[0].exc_info[1])  # type: ignore[index]
        assert found.group(1) in logged[0].getMessage()


@pytest.mark.parametrize(("kind", "version"), [TRANSPORTS[0], TRANSPORTS[3]])
def test_expose_tool_errors_puts_their_text_on_the_wire(kind: str, version: str) -> None:
    with _client(kind, _server(True), version) as client:
        with pytest.raises(MCPError) as completed:
            client.complete("greet", "who", "a")
        with pytest.raises(MCPError) as raw:
            client.request("x/lookup", {})
    assert completed.value.message == f"Error in completion/complete: {SECRET}"
    assert raw.value.message == f"Error in x/lookup: '{SECRET}'"
