"""One context type: a request's, a detached and a task's context are all a
``HandlerContext``, each on its own pair of ports (where messages go, how long it lives).
What each kind does is tested where it is used; this says that the kinds stay the one type
and that each pair keeps its lifetime's rules."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpsync import (
    Client,
    ContextClosedError,
    DetachedContext,
    HandlerContext,
    RequestCancelledError,
    Server,
    TaskContext,
)
from tests.helpers import WAIT


def test_a_detached_context_is_the_one_type_on_the_sessions_ports() -> None:
    server = Server("one-context")
    kept: dict[str, Any] = {}

    @server.tool()
    def start(ctx: HandlerContext) -> str:
        detached = ctx.detach()
        kept.update(ctx=ctx, detached=detached, id=ctx.request_id)
        assert isinstance(detached, HandlerContext) and isinstance(detached, DetachedContext)
        assert not isinstance(ctx, DetachedContext)
        assert detached.detach() is detached
        assert (detached.request_id, detached.method) == (ctx.request_id, ctx.method)
        assert detached.session is ctx.session and detached.transport is ctx.transport
        assert detached.server is ctx.server and detached.meta is ctx.meta
        assert not detached.closed and not detached.cancelled.is_set()
        assert not detached.close_sse_stream()
        return "started"

    with Client.memory(server) as client:
        assert client.call_tool("start").text == "started"
        ctx, detached = kept["ctx"], kept["detached"]
        assert ctx.closed and not detached.closed
        with pytest.raises(ContextClosedError):
            ctx.notify("notifications/message", {"level": "info", "data": "late"})
        detached.progress(1.0)  # after the response: dropped, never ContextClosedError
        detached.check_cancelled()
    assert detached.cancelled.is_set()  # the session ended with the client
    with pytest.raises(RequestCancelledError, match="the session has ended"):
        detached.sleep(WAIT)


def test_a_task_context_is_a_detached_context_that_detaches_to_itself() -> None:
    server = Server("one-context-task")
    seen: dict[str, Any] = {}
    done = threading.Event()

    @server.tool(task="required")
    def job(ctx: HandlerContext) -> str:
        seen.update(kinds=(isinstance(ctx, TaskContext), isinstance(ctx, DetachedContext),
                           isinstance(ctx, HandlerContext)),
                    detached=ctx.detach() is ctx, closed=ctx.closed,
                    stream=ctx.close_sse_stream(),
                    request_id=ctx.request_id == getattr(ctx, "task_id", None))
        done.set()
        return "done"

    with Client.memory(server, timeout=WAIT) as client:
        handle = client.start_task("job")
        assert handle.result(timeout=WAIT).text == "done"
    server.close_tasks(WAIT)
    assert done.is_set()
    assert seen == {"kinds": (True, True, True), "detached": True, "closed": False,
                    "stream": False, "request_id": True}
