"""One tool-outcome function (issue 34): every place a tool's failure becomes an
``isError`` result goes through it, and each failure is logged once, with its traceback."""

from __future__ import annotations

import logging

import pytest

from mcpsync import Client, HandlerContext, Server
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
    assert result.is_error and result.text == "Error executing tool report: kaput 3"
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
    assert result.is_error and result.text == "Error executing tool boom: no such thing"
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and isinstance(logged[0].exc_info[1], ValueError)  # type: ignore[index]


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
