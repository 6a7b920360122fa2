"""Server.request_scope: setup and teardown on the request's own thread, in both eras."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import (
    Client,
    ElicitResult,
    HandlerContext,
    HostHandlers,
    Implementation,
    MCPSyncError,
    Server,
)
from tests.helpers import WAIT, run_threads

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
VERSIONS = [LEGACY, MODERN]


def scoped_server() -> tuple[Server, list[tuple[str, str, str]]]:
    """A server whose scope records (event, method, thread name) for every request."""
    server = Server("scoped", request_state_key="request-scope-tests")
    log: list[tuple[str, str, str]] = []
    lock = threading.Lock()

    def record(event: str, ctx: HandlerContext) -> None:
        with lock:
            log.append((event, ctx.method, threading.current_thread().name))

    @server.request_scope
    def around(ctx: HandlerContext) -> Iterator[None]:
        record("enter", ctx)
        try:
            yield
        finally:
            record("exit", ctx)

    @server.tool()
    def where(ctx: HandlerContext) -> str:
        record("tool", ctx)
        return threading.current_thread().name

    @server.tool()
    def fails() -> str:
        raise ValueError("boom")

    return server, log


@pytest.mark.parametrize("version", VERSIONS)
def test_scope_runs_around_the_handler_on_its_thread(version):
    server, log = scoped_server()
    with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
        thread = client.call_tool("where").text
        calls = [entry for entry in log if entry[1] == "tools/call"]
        assert [event for event, _, _ in calls] == ["enter", "tool", "exit"]
        assert {name for _, _, name in calls} == {thread}
        log.clear()
        assert client.call_tool("fails").is_error  # the scope still closes
        assert [event for event, method, _ in log if method == "tools/call"] == [
            "enter", "exit"]


def test_scopes_nest_in_registration_order():
    server = Server("nested")
    order: list[str] = []

    for name in ("outer", "inner"):
        def scope(ctx: HandlerContext, name: str = name) -> Iterator[None]:
            order.append(f"{name}+")
            yield
            order.append(f"{name}-")
        server.request_scope(scope)

    @server.tool()
    def ping() -> str:
        order.append("tool")
        return "pong"

    with Client.memory(server, timeout=WAIT) as client:
        order.clear()
        client.call_tool("ping")
    assert order == ["outer+", "inner+", "tool", "inner-", "outer-"]


def test_a_failing_scope_fails_the_request_not_the_server():
    server = Server("strict")

    @server.request_scope
    def tenant(ctx: HandlerContext) -> contextlib.AbstractContextManager[None]:
        if ctx.method == "tools/call" and ctx.session.client_info is not None and (
                ctx.session.client_info.get("name") == "intruder"):
            raise PermissionError("no tenant")
        return contextlib.nullcontext()

    @server.tool()
    def hello() -> str:
        return "hi"

    with Client.memory(server, timeout=WAIT, client_info=Implementation("intruder", "1")) as client:
        # A scope's failure is a handler's: generic text with the request id (no "no tenant")
        with pytest.raises(MCPSyncError,
                           match=r"^Error in tools/call: an internal error occurred \(request"):
            client.call_tool("hello")
        assert [t.name for t in client.list_tools()] == ["hello"]  # still serving
    with Client.memory(server, timeout=WAIT) as client:
        assert client.call_tool("hello").text == "hi"


def test_a_thread_bound_sqlite_connection_per_request():
    # The Superset / apple-mail failure: a connection made on one pooled thread and used
    # on another. A scope opens it on the request's thread and closes it there.
    server = Server("sqlite")
    local = threading.local()

    @server.request_scope
    def connection(ctx: HandlerContext) -> Iterator[None]:
        local.db = sqlite3.connect(":memory:")  # check_same_thread=True, the default
        try:
            yield
        finally:
            local.db.close()
            del local.db

    @server.tool()
    def answer() -> int:
        return int(local.db.execute("select 6 * 7").fetchone()[0])

    with Client.memory(server, timeout=WAIT) as client:
        def call(i: int) -> None:
            assert client.call_tool("answer").structured_content == {"result": 42}

        run_threads(call, 16, name="caller", timeout=WAIT)


def test_each_mrtr_attempt_is_its_own_scope():
    server, log = scoped_server()

    @server.tool()
    def ask(ctx: HandlerContext) -> str:
        answer = ctx.elicit("Name?", {"type": "object", "properties": {
            "name": {"type": "string"}}})
        return str((answer.content or {}).get("name"))

    def elicit(params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    with Client.memory(server, protocol_version=MODERN, timeout=WAIT,
                       host=HostHandlers(elicitation=elicit)) as client:
        log.clear()
        assert client.call_tool("ask").text == "Ada"
    # The first attempt ends with the question, the retry runs with the answer.
    assert [event for event, method, _ in log if method == "tools/call"] == [
        "enter", "exit", "enter", "exit"]
