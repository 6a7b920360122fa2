"""Ctrl-C that lands while a call is being sent (the request has left, the caller does
not wait for its answer yet) ends the call as one interrupted while waiting does: the
server is told and its handler sees the cancellation. The same engine path on every
transport; over HTTP, tests/transports/test_http_abandon.py also checks the POST's thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpsync import Client, ClientMiddleware, HandlerContext, Server
from tests.helpers import WAIT
from tests.serving import client_over

ERAS = ("2025-11-25", "2026-07-28")


def waiting_server() -> tuple[Server, threading.Event, threading.Event]:
    server = Server("waits", request_state_key="k")
    started, cancelled = threading.Event(), threading.Event()

    @server.tool()
    def wait(ctx: HandlerContext) -> str:
        started.set()
        if ctx.cancelled.wait(WAIT):
            cancelled.set()
        return "done"

    return server, started, cancelled


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["memory", "http"])
def test_ctrl_c_while_sending_tells_the_server(kind: str, version: str) -> None:
    server, started, cancelled = waiting_server()

    def interrupt_once_sent(message: Any, next_: Any) -> Any:
        answer = next_(message)
        if getattr(message, "method", None) == "tools/call":
            assert started.wait(WAIT)  # the server has it; the caller is not waiting yet
            raise KeyboardInterrupt
        return answer

    with client_over(kind, server, None, version,
                     middleware=ClientMiddleware(send=[interrupt_once_sent])) as client:
        assert isinstance(client, Client)
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("wait", {}, timeout=WAIT)
        assert cancelled.wait(WAIT / 3), "the server was never told"
