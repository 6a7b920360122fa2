"""``ctx.debug/info/.../critical`` and ``ctx.read_resource``, on a request's context, a
detached one and a task's, in memory and over HTTP, in both eras."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import (
    Client,
    HandlerContext,
    InvalidParamsError,
    LogMessage,
    ReadResourceResult,
    ResourceNotFoundError,
    Server,
)
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
VERSIONS = [LEGACY, MODERN]
LOG_META = {"io.modelcontextprotocol/logLevel": "debug"}
LEVELS = ["debug", "info", "notice", "warning", "error", "critical"]


def shortcut_server() -> Server:
    server = Server("shortcuts", request_state_key="shortcut-tests")

    @server.resource("notes://{name}", mime_type="text/markdown")
    def note(name: str) -> str:
        if name == "missing":
            raise ResourceNotFoundError(f"no note {name}")
        return f"# {name}"

    @server.resource("blob://one")
    def blob() -> bytes:
        return b"\x00\x01"

    @server.tool()
    def shout(ctx: HandlerContext) -> str:
        for level in LEVELS:
            getattr(ctx, level)(f"{level} message", logger="shout")
        return "done"

    @server.tool()
    def detached_shout(ctx: HandlerContext) -> str:
        detached = ctx.detach()
        detached.warning("from the detached context")
        return "done"

    @server.tool()
    def read(ctx: HandlerContext, uri: str) -> str:
        result = ctx.read_resource(uri)
        assert isinstance(result, ReadResourceResult)
        item = result.contents[0]
        return f"{type(item).__name__} {getattr(item, 'text', None) or item.blob} " \
               f"{item.mime_type}"

    @server.tool()
    def read_missing(ctx: HandlerContext, uri: str) -> str:
        try:
            ctx.read_resource(uri)
        except ResourceNotFoundError as exc:
            return f"not found: {exc.message}"
        return "found?"

    @server.tool(task="optional")
    def task_read(ctx: HandlerContext) -> str:
        ctx.info("in a task")
        return f'{type(ctx).__name__} {ctx.read_resource("notes://task").contents[0].text}'

    return server


@pytest.fixture(params=["memory", "http"])
def connect(request: pytest.FixtureRequest) -> Iterator[Any]:
    server = shortcut_server()
    if request.param == "memory":
        yield lambda version, **kw: Client.memory(server, protocol_version=version,
                                                  timeout=WAIT, **kw)
        return
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield lambda version, **kw: Client.http(running.base + "/mcp", protocol_version=version,
                                                timeout=WAIT, **kw)


@pytest.mark.parametrize("version", VERSIONS)
def test_log_shortcuts_send_each_level(connect: Any, version: str) -> None:
    logs: list[LogMessage] = []
    lock = threading.Lock()

    def on_log(message: LogMessage) -> None:
        with lock:
            logs.append(message)

    with connect(version, on_log=on_log) as client:
        if version == LEGACY:
            client.set_logging_level("debug")
        assert client.call_tool("shout", meta=LOG_META).text == "done"
        wait_until(lambda: len(logs) >= len(LEVELS), timeout=WAIT)
        assert [(m.level, m.data, m.logger) for m in logs] == [
            (level, f"{level} message", "shout") for level in LEVELS]
        if version == LEGACY:  # a detached context has a channel in the handshake era only
            logs.clear()
            client.call_tool("detached_shout")
            wait_until(lambda: len(logs) >= 1, timeout=WAIT)
            assert [(m.level, m.data) for m in logs] == [
                ("warning", "from the detached context")]


@pytest.mark.parametrize("version", VERSIONS)
def test_read_resource_from_a_tool(connect: Any, version: str) -> None:
    with connect(version) as client:
        text = client.call_tool("read", {"uri": "notes://today"})
        assert text.text == "TextResourceContents # today text/markdown", text
        blob = client.call_tool("read", {"uri": "blob://one"})
        assert blob.text == "BlobResourceContents AAE= application/octet-stream", blob
        # what the client itself gets for the same URI
        assert client.read_resource("notes://today").contents[0].text == "# today"
        assert client.call_tool("read_missing", {"uri": "nothing://here"}).text == (
            "not found: Resource not found: nothing://here")
        assert client.call_tool("read_missing", {"uri": "notes://missing"}).text == (
            "not found: no note missing")


@pytest.mark.parametrize("version", VERSIONS)
def test_task_context_logs_and_reads(version: str) -> None:
    server = shortcut_server()
    with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
        handle = client.start_task("task_read")
        assert handle.result(timeout=WAIT).text == "TaskContext # task"
    server.close_tasks()


@pytest.mark.parametrize(("version", "error", "code"), [
    (LEGACY, ResourceNotFoundError, -32002), (MODERN, InvalidParamsError, -32602)])
def test_what_the_client_raises_for_a_missing_resource(connect: Any, version: str,
                                                       error: type, code: int) -> None:
    """As docs/client.md says: the era's code, as its exception class, data the URI."""
    with connect(version) as client, pytest.raises(error) as info:
        client.read_resource("nothing://here")
    assert info.value.code == code and info.value.data == {"uri": "nothing://here"}
