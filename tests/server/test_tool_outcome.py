"""One tool-outcome function (issue 34): every place a tool's failure becomes an
``isError`` result goes through it, and each failure is logged once, with its traceback.
The wire policy: an exception's text reaches the client only when a tool raised it on
purpose (``ToolError``) or the server exposes details (``expose_tool_errors``); the same for
resources and prompts, as -32603."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from mcpsync import Client, HandlerContext, MCPError, ProtocolOptions, Server, ToolError
from mcpsync.tasks import RunAsTask
from tests.helpers import WAIT

MODERN = "2026-07-28"


def _deferring_server() -> Server:
    server = Server("deferring")

    def the_long_part(ctx: HandlerContext, n: int) -> int:
        raise RuntimeError(f"kaput {n}")

    @server.tool(task="optional", defer_task=True)
    def report(n: int) -> int:
        raise RunAsTask(the_long_part, n)

    return server


@pytest.mark.parametrize("version", ["2025-06-18", MODERN])  # inline, and as a task
def test_a_deferred_continuation_that_raises_is_logged_once_with_its_traceback(
        version: str, caplog: pytest.LogCaptureFixture) -> None:
    server = _deferring_server()
    with caplog.at_level(logging.ERROR, logger="mcpsync"), Client.memory(
            server, protocol_version=version, timeout=WAIT) as client:
        result = client.call_tool("report", {"n": 3})
    server.stop()
    assert result.is_error and result.text.startswith(
        "Error executing tool report: an internal error occurred (request ")
    assert "kaput" not in result.text
    logged = [r for r in caplog.records if r.exc_info and "kaput 3" in str(r.exc_info[1])]
    assert len(logged) == 1, [r.getMessage() for r in caplog.records]
    assert "report" in logged[0].getMessage()


def test_a_tool_that_raises_is_logged_once_with_its_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    server = Server("plain")

    @server.tool()
    def boom() -> str:
        raise ValueError("no such thing")

    with caplog.at_level(logging.ERROR, logger="mcpsync"), Client.memory(
            server, timeout=WAIT) as client:
        result = client.call_tool("boom")
    assert result.is_error and "no such thing" not in result.text
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and isinstance(logged[0].exc_info[1], ValueError)  # type: ignore[index]


def _leaky_server(**options: object) -> Server:
    server = Server("leaky", protocol=ProtocolOptions(**options))  # type: ignore[arg-type]

    @server.tool()
    def connect() -> str:
        raise RuntimeError("password=hunter2 at db.internal:5432")

    @server.tool()
    def reserve(seats: int) -> str:
        raise ToolError(f"only {seats - 1} seats left")

    @server.resource("config://app")
    def config() -> str:
        raise OSError("/srv/secret/config.toml: permission denied")

    @server.resource("config://refused")
    def refused() -> str:
        raise ToolError("the configuration is being rewritten, try again")

    @server.prompt()
    def greet(who: str) -> str:
        raise KeyError("api_key=sk-123")

    return server


@pytest.mark.parametrize("version", ["2025-06-18", MODERN])
def test_an_unexpected_exception_s_text_never_reaches_the_wire_and_the_log_has_it(
        version: str, caplog: pytest.LogCaptureFixture) -> None:
    server = _leaky_server()
    with caplog.at_level(logging.INFO, logger="mcpsync"), Client.memory(
            server, protocol_version=version, timeout=WAIT) as client:
        result = client.call_tool("connect")
    assert result.is_error and "hunter2" not in result.text and "RuntimeError" not in result.text
    assert result.text.startswith("Error executing tool connect: an internal error occurred")
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and "hunter2" in str(logged[0].exc_info[1])  # type: ignore[index]
    # The operator matches the client's report with the log line by the request id.
    request_id = result.text.rsplit("(request ", 1)[1].rstrip(")")
    assert f"(request {request_id})" in logged[0].getMessage()


@pytest.mark.parametrize("version", ["2025-06-18", MODERN])
def test_a_tool_error_raised_on_purpose_keeps_its_text_and_logs_no_traceback(
        version: str, caplog: pytest.LogCaptureFixture) -> None:
    server = _leaky_server()
    with caplog.at_level(logging.INFO, logger="mcpsync"), Client.memory(
            server, protocol_version=version, timeout=WAIT) as client:
        result = client.call_tool("reserve", {"seats": 3})
        invalid = client.call_tool("reserve", {"seats": "three"})
    assert result.is_error and result.text == "Error executing tool reserve: only 2 seats left"
    assert not [r for r in caplog.records if r.exc_info]
    # The binding's own argument errors are written for the model too.
    assert invalid.is_error and "Invalid arguments for tool 'reserve'" in invalid.text


@pytest.mark.parametrize("version", ["2025-06-18", MODERN])
def test_a_resource_or_prompt_that_raises_is_a_32603_without_its_text(
        version: str, caplog: pytest.LogCaptureFixture) -> None:
    server = _leaky_server()
    with caplog.at_level(logging.INFO, logger="mcpsync"), Client.memory(
            server, protocol_version=version, timeout=WAIT) as client:
        with pytest.raises(MCPError) as read:
            client.read_resource("config://app")
        with pytest.raises(MCPError) as rendered:
            client.get_prompt("greet", {"who": "x"})
        with pytest.raises(MCPError) as on_purpose:
            client.read_resource("config://refused")
    assert read.value.code == rendered.value.code == on_purpose.value.code == -32603
    assert "secret" not in read.value.message and "OSError" not in read.value.message
    assert read.value.message.startswith(
        "Error in resource config://app: an internal error occurred (request ")
    assert "sk-123" not in rendered.value.message
    assert rendered.value.message.startswith("Error in prompt greet: an internal error")
    assert on_purpose.value.message == (
        "Error in resource config://refused: the configuration is being rewritten, try again")
    logged = [r for r in caplog.records if r.exc_info]
    assert sorted(type(r.exc_info[1]).__name__ for r in logged) == [  # type: ignore[index]
        "KeyError", "OSError"]  # once each, not again by the dispatcher


def test_expose_tool_errors_puts_the_text_on_the_wire_for_development() -> None:
    server = _leaky_server(expose_tool_errors=True)
    with Client.memory(server, timeout=WAIT) as client:
        result = client.call_tool("connect")
        with pytest.raises(MCPError) as read:
            client.read_resource("config://app")
    assert result.text == "Error executing tool connect: password=hunter2 at db.internal:5432"
    assert read.value.message == (
        "Error in resource config://app: /srv/secret/config.toml: permission denied")


def test_an_answer_that_cannot_be_written_over_http_is_an_error_result_and_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    """The same class of defect: over HTTP the stand-in for an unencodable answer was sent
    without a word in the log (the engine's writer logs it on stdio and memory)."""
    from tests.http.raw import answer_of, post_modern
    from tests.serving import RunningServer

    server = Server("surrogates")

    @server.tool()
    def lone() -> str:
        return "half a pair: \ud800"

    app = server.wsgi_app(path="/mcp")
    with caplog.at_level(logging.ERROR, logger="mcpsync"), RunningServer(
            app, on_stop=app.close) as running:
        answer = answer_of(post_modern(running.base + "/mcp", "tools/call", {"name": "lone"}))
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"].startswith("Error: cannot encode")
    assert len([r for r in caplog.records if "cannot encode" in r.getMessage()]) == 1


@pytest.mark.parametrize("version", ["2025-06-18", MODERN])
@pytest.mark.parametrize("expose", [False, True])
def test_the_policy_is_the_same_over_http(version: str, expose: bool) -> None:
    from tests.serving import RunningServer

    app = _leaky_server(expose_tool_errors=expose).wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version=version, timeout=WAIT) as client:
        hidden = client.call_tool("connect")
        told = client.call_tool("reserve", {"seats": 3})
        with pytest.raises(MCPError) as read:
            client.read_resource("config://app")
    assert told.text == "Error executing tool reserve: only 2 seats left"
    assert ("hunter2" in hidden.text) is expose
    assert ("/srv/secret" in read.value.message) is expose
    assert read.value.code == -32603


def test_the_policy_is_the_same_over_stdio(tmp_path: Path) -> None:
    script = tmp_path / "leaky.py"
    script.write_text(
        "from mcpsync import Server\n"
        "server = Server('leaky')\n"
        "@server.tool()\n"
        "def connect() -> str:\n"
        "    raise RuntimeError('password=hunter2')\n"
        "server.run_stdio()\n")
    with Client.stdio([sys.executable, str(script)], timeout=WAIT) as client:
        hidden = client.call_tool("connect")
    assert hidden.is_error and "hunter2" not in hidden.text
    assert hidden.text.startswith("Error executing tool connect: an internal error occurred")
