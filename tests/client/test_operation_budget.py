"""A client operation made of several requests has one time budget: listing every page,
and connecting (probe, handshake, log level). Each request used to get the whole
``timeout`` again, so an operation could wait a multiple of it.

How the bug shows: every step here fits in the timeout on its own and all of them do not,
so with a budget per request the operation succeeds (``pytest.raises`` fails), whatever
the machine's load; with one budget it fails by the timeout. The elapsed time is only
checked against half of ``WAIT`` (a hang), never against a bound a loaded machine could
pass by a second."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mcpsync import Client, ElicitResult, HandlerContext, HostHandlers, Server, ServerLimits
from mcpsync.errors import RequestTimeoutError
from mcpsync.types import ElicitRequestParams
from tests.helpers import WAIT
from tests.transports.hostile import LEGACY, MODERN, RawHttpServer, RawRequest

PAGE_DELAY = 0.3


def slow_pages_server() -> Server:
    server = Server("slow-pages", limits=ServerLimits(page_size=1))
    for i in range(10):
        server.tool(name=f"tool_{i}")(lambda: "ok")
    server.recv_middleware.append(_slow_lists)
    return server


def _slow_lists(message: Any, call_next: Any) -> None:
    if getattr(message, "method", None) == "tools/list":
        threading.Event().wait(PAGE_DELAY)  # a slow server on purpose, not a wait on it
    call_next(message)


def test_listing_every_page_shares_one_budget() -> None:
    server = slow_pages_server()
    with Client.memory(server) as client:
        assert len(client.list_tools(timeout=30)) == 10  # 10 pages, ~3 s, well within 30
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            client.list_tools(timeout=1.0)  # each page would fit in 1 s, all ten do not
        assert time.monotonic() - started < WAIT / 2


def test_connecting_shares_one_budget() -> None:
    # A handshake-era server that never answers server/discover and answers initialize
    # late: probe + handshake must fit in the client's timeout together.
    def script(request: RawRequest) -> None:
        if request.rpc_method == "server/discover":
            request.server.stopping.wait(30)
        elif request.rpc_method == "initialize":
            request.server.stopping.wait(0.8)
            request.answer({"protocolVersion": LEGACY, "capabilities": {},
                            "serverInfo": {"name": "late", "version": "1"}},
                           **{"Mcp-Session-Id": "s1"})
        elif request.rpc_id is None:
            request.accepted()
        else:
            request.answer({})

    with RawHttpServer(script) as server:
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            Client.http(server.url, timeout=1.0, read_timeout=5.0).close()
        assert time.monotonic() - started < WAIT / 2
        server.stopping.set()


def two_questions_server() -> Server:
    server = Server("budget-rounds", request_state_key="k")

    @server.tool()
    def interview(ctx: HandlerContext) -> str:
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        first = ctx.elicit("first?", schema).content["a"]
        second = ctx.elicit("second?", schema).content["a"]
        return f"{first}{second}"

    return server


def slow_person(params: ElicitRequestParams) -> ElicitResult:
    threading.Event().wait(0.6)  # a person taking their time, on purpose
    return ElicitResult("accept", {"a": "x"})


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_every_round_of_a_call_shares_its_budget(version: str) -> None:
    # Two questions answered in 0.6 s each do not fit in a 1 s call, in either era: the
    # 2026-07-28 retries used to get the whole timeout each, the handshake era never did.
    with Client.memory(two_questions_server(), protocol_version=version,
                       host=HostHandlers(elicitation=slow_person)) as client:
        assert client.call_tool("interview", timeout=10).text == "xx"
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            client.call_tool("interview", timeout=1.0)
        assert time.monotonic() - started < WAIT / 2
