"""``Client(limits=ClientLimits(retry=RetryPolicy()))`` (issue 40): an idempotent call
refused by a server's limit is tried again after the ``retryAfter`` it was given, within
the call's deadline; a call that may have had effects (``tools/call`` of a tool not marked
``readOnlyHint``) never is. On memory, a real stdio subprocess and real HTTP, in both
eras; the server's audit log (``tests/middleware/guarded_server.py``) says what reached
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsync import ClientLimits, RateLimitedError, RetryPolicy
from mcpsync.client.calls import retry_pause
from mcpsync.errors import (
    ConnectionClosedError,
    InvalidParamsError,
    MCPError,
    MessageTooLargeError,
)
from tests.middleware.test_guards import TRANSPORTS, VERSIONS, calls, guarded, text

every = pytest.mark.parametrize("version", VERSIONS)
over = pytest.mark.parametrize("kind", TRANSPORTS)


def outcomes(records: list[dict[str, object]], name: str) -> list[object]:
    return [r["outcome"] for r in records if r.get("tool") == name or r.get("uri") == name]


@every
@over
def test_a_refused_read_only_call_and_a_read_are_retried_after_the_wait(
        kind: str, version: str, tmp_path: Path) -> None:
    limits = ClientLimits(retry=RetryPolicy(attempts=4))
    with guarded(kind, version, tmp_path, limits=limits) as g:
        g.client.list_tools()  # (where the client learns which tools are read-only)
        assert [text(g.client.call_tool("quick_read", {"n": n}))
                for n in range(3)] == ["0", "1", "2"]
        reads = [g.client.read_resource("guarded://limited").contents[0].text
                 for _ in range(3)]
        assert reads == ["limited read"] * 3
        records = g.audit()
    # The third of each was refused at least once, then served: nothing reached the
    # caller but the answers.
    for name in ("quick_read", "guarded://limited"):
        seen = outcomes(records, name)
        assert seen.count("ok") == 3 and "refused" in seen
        assert seen[-1] == "ok"


@every
@over
def test_a_call_that_may_have_effects_is_never_retried(kind: str, version: str,
                                                       tmp_path: Path) -> None:
    limits = ClientLimits(retry=RetryPolicy(attempts=5))
    with guarded(kind, version, tmp_path, limits=limits) as g:
        g.client.list_tools()
        for _ in range(3):
            g.client.call_tool("limited")
        with pytest.raises(RateLimitedError):
            g.client.call_tool("limited")
        assert calls(g.client)["limited"] == 3
        records = g.audit()
    assert outcomes(records, "limited") == ["ok", "ok", "ok", "refused"]  # asked once


@every
def test_a_wait_past_the_calls_deadline_is_not_taken(version: str, tmp_path: Path) -> None:
    limits = ClientLimits(retry=RetryPolicy(attempts=5))
    with guarded("memory", version, tmp_path, limits=limits) as g:
        g.client.list_tools()
        g.client.call_tool("quick_read", {"n": 1})
        g.client.call_tool("quick_read", {"n": 2})
        with pytest.raises(RateLimitedError):  # the wait (~1 s) is more than the 0.2 s left
            g.client.call_tool("quick_read", {"n": 3}, timeout=0.2)
        records = g.audit()
    assert outcomes(records, "quick_read") == ["ok", "ok", "refused"]


def test_without_a_policy_nothing_is_retried(tmp_path: Path) -> None:
    with guarded("memory", "2026-07-28", tmp_path) as g:
        g.client.list_tools()
        g.client.call_tool("quick_read", {"n": 1})
        g.client.call_tool("quick_read", {"n": 2})
        with pytest.raises(RateLimitedError):
            g.client.call_tool("quick_read", {"n": 3})


def test_which_failures_are_retried_and_how_long_the_pauses_are() -> None:
    policy = RetryPolicy(attempts=3, backoff=0.5, max_backoff=0.75)
    limited = RateLimitedError("slow down", retry_after=2.0)
    for attempt, ceiling in ((1, 0.5), (2, 0.75)):
        pause = retry_pause(policy, attempt, limited)
        assert pause is not None and 2.0 <= pause <= 2.0 + ceiling  # the server's floor
    assert retry_pause(policy, 3, limited) is None  # no tries left
    gone = retry_pause(policy, 1, ConnectionClosedError("refused"))
    assert gone is not None and 0 <= gone <= 0.5
    assert retry_pause(policy, 1, InvalidParamsError("bad")) is None  # will not pass
    gateway = retry_pause(policy, 1, MCPError("HTTP 503", code=-32000,
                                              data={"httpStatus": 503}))
    assert gateway is not None and 0 <= gateway <= 0.5
    assert retry_pause(policy, 1, MCPError("HTTP 500", code=-32000,
                                           data={"httpStatus": 500})) is None
    assert retry_pause(policy, 1, MessageTooLargeError("big")) is None
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_balancers_502_is_retried_for_a_read_and_not_for_a_call(version: str) -> None:
    from collections.abc import Callable
    from typing import Any

    from mcpsync import Client
    from tests.middleware.guarded_server import build
    from tests.serving import RunningServer

    server = build()
    app = server.wsgi_app(path="/mcp")
    down = {"left": 0}

    def balancer(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """A gateway whose upstream is away for the next ``left`` POSTs."""
        if environ["REQUEST_METHOD"] == "POST" and down["left"] > 0:
            down["left"] -= 1
            start_response("502 Bad Gateway", [("Content-Type", "text/html")])
            return [b"<html><body>502 Bad Gateway</body></html>"]
        return app(environ, start_response)

    limits = ClientLimits(retry=RetryPolicy(attempts=3, backoff=0.05))
    with RunningServer(balancer, on_stop=app.close) as running, \
            Client.http(running.base + "/mcp", protocol_version=version, limits=limits,
                        timeout=30) as client:
        client.list_tools()
        down["left"] = 2
        assert client.read_resource("guarded://limited").contents[0].text == "limited read"
        assert down["left"] == 0  # two 502s, then the answer
        down["left"] = 1
        with pytest.raises(MCPError) as failed:
            client.call_tool("bump")  # may have run behind the gateway: not retried
        assert failed.value.data == {"httpStatus": 502}
        assert calls(client)["bump"] == 0
