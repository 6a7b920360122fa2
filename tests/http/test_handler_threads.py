"""Which thread runs a handshake-era session's handler on HTTP.

A tool without a context parameter can neither report progress nor see cancellation: its
handler runs on the POST's own thread (as in 2026-07-28), sparing two thread switches per
call. Everything else keeps the handler pool: a tool with a context (progress,
cancellation, requests to the client), any call while receive middleware runs (a handler
never runs inside it), and batches (their requests run concurrently).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpsync import HandlerContext, Server
from mcpsync.http.services import HandOffPool

from .raw import LegacySession, answer_of

POOL = "mcpsync-http-handler-"


def _server() -> Server:
    server = Server("threads")

    @server.tool()
    def plain() -> str:
        """Context-free: runs on the POST's thread."""
        return threading.current_thread().name

    @server.tool()
    def with_ctx(ctx: HandlerContext) -> str:
        """Sees its context: runs on the pool."""
        return threading.current_thread().name

    @server.tool()
    def slow() -> str:
        """Context-free but slower than half the JSON window of the slow-tool test."""
        threading.Event().wait(0.3)  # the tool's own work, not a wait for the test
        return threading.current_thread().name

    @server.tool()
    def fails() -> str:
        """An exception in an inline handler is still the one error mapping's."""
        raise RuntimeError("secret detail")

    return server


def _thread_of(session: LegacySession, tool: str) -> str:
    result = session.call("tools/call", {"name": tool, "arguments": {}})["result"]
    assert not result.get("isError"), result
    name: str = result["content"][0]["text"]
    return name


def test_context_free_tool_runs_on_the_post_thread(serve: Any) -> None:
    session = LegacySession(serve(_server()).url)
    for _ in range(3):
        assert not _thread_of(session, "plain").startswith(POOL)
        assert _thread_of(session, "with_ctx").startswith(POOL)


def test_receive_middleware_keeps_handlers_on_the_pool(serve: Any) -> None:
    server = _server()
    seen: list[str] = []

    def middleware(message: Any, next_: Any) -> None:
        seen.append(getattr(message, "method", ""))
        next_(message)

    server.recv_middleware.append(middleware)
    session = LegacySession(serve(server).url)
    assert _thread_of(session, "plain").startswith(POOL)
    assert "tools/call" in seen


def test_inline_handler_failure_is_an_internal_error(serve: Any) -> None:
    session = LegacySession(serve(_server()).url)
    answer = session.call("tools/call", {"name": "fails", "arguments": {}})
    # Answered (not lost with the pool), and the POST's thread still serves the session.
    assert "result" in answer or "error" in answer, answer
    assert not _thread_of(session, "plain").startswith(POOL)


@pytest.mark.parametrize("version", ["2025-03-26"])
def test_batched_calls_stay_on_the_pool(serve: Any, version: str) -> None:
    session = LegacySession(serve(_server()).url, version=version)
    batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
              "params": {"name": "plain", "arguments": {}}} for i in (1, 2)]
    response = session.post(batch)
    assert response.status_code == 200, response.text
    answers = response.json()
    assert len(answers) == 2
    for answer in answers:
        assert answer["result"]["content"][0]["text"].startswith(POOL)


def test_a_slow_context_free_tool_goes_back_to_the_pool(serve: Any) -> None:
    # Inline, a call is answered only when it is done: one slower than the JSON window
    # would never be upgraded to an SSE stream (with its priming event, resumable). So a
    # tool seen to take over half the window runs on the pool from then on.
    served = serve(_server(), json_window=0.2)
    session = LegacySession(served.url)
    assert not _thread_of(session, "slow").startswith(POOL)
    assert "slow" in served.app.slow_tools
    request_id, response = session.request("tools/call", {"name": "slow", "arguments": {}},
                                           stream=True)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/event-stream")
    answer = answer_of(response, request_id)
    assert answer["result"]["content"][0]["text"].startswith(POOL)
    assert not _thread_of(session, "plain").startswith(POOL)  # quick tools stay inline



def test_hand_off_pool_runs_one_armed_job_here() -> None:
    pool = HandOffPool(2, name="mcpsync-test-handoff", max_backlog=4)
    ran: list[str] = []
    pooled = threading.Event()

    def job() -> None:
        ran.append(threading.current_thread().name)

    def later() -> None:
        ran.append(threading.current_thread().name)
        pooled.set()

    def broken() -> None:
        raise RuntimeError("logged, not raised to the caller")

    try:
        with pool.inline_next():
            pool.submit(job)    # here
            pool.submit(later)  # armed once only: the pool
        assert ran[0] == threading.current_thread().name
        assert pooled.wait(10) and ran[1].startswith("mcpsync-test-handoff-")
        with pool.inline_next():
            pool.submit(broken)
    finally:
        assert pool.shutdown(10)
    with pool.inline_next(), pytest.raises(RuntimeError, match="shut down"):
        pool.submit(job)  # a shut-down pool refuses, armed or not
