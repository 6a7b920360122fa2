"""The HTTP transport's per-call bookkeeping is freed when a call ends, however it ends."""

from __future__ import annotations

import threading

import pytest

from mcpsync import Client, HandlerContext, ProtocolOptions, RequestTimeoutError, Server
from mcpsync.protocol.versions import MODERN_VERSIONS
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer


def tables(client: Client) -> tuple[int, ...]:
    """(methods, cancelled, open responses) the transport tracks for calls; the standalone
    GET stream is the session's, not a call's."""
    table = client._connection.transport._table  # type: ignore[attr-defined]
    with table._lock:
        calls = [key for key in table._open if key != "mcpsync-get"]
        return (len(table._methods), len(table._cancelled), len(calls))


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_timed_out_calls_leave_nothing_behind(version):
    srv = Server("hanging", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    release = threading.Event()

    @srv.tool()
    def hang(ctx: HandlerContext) -> str:
        ctx.sleep(WAIT)
        return "late"

    @srv.tool()
    def quick() -> str:
        return "quick"

    app = srv.wsgi_app(path="/mcp", keepalive_interval=0.05)
    with RunningServer(app) as running, Client.http(
            running.base + "/mcp", protocol_version=version, timeout=WAIT) as client:
        for _ in range(5):
            with pytest.raises(RequestTimeoutError):
                client.call_tool("hang", timeout=0.2)
        assert client.call_tool("quick").text == "quick"
        wait_until(lambda: tables(client) == (0, 0, 0), timeout=WAIT,
                   message=lambda: tables(client))
    release.set()
    app.close()


def test_timed_out_calls_over_http_sse_leave_nothing_behind():
    # 2024-11-05 HTTP+SSE: the POST is answered 202 and the answer is awaited on the one
    # GET stream; a call given up on must not stay in the tables waiting for it.
    from tests.server.fixture_server import server as fixture_server

    app = fixture_server.wsgi_app(path="/mcp")
    with RunningServer(app) as running, Client.http(
            running.base + "/sse", protocol_version="2024-11-05", timeout=WAIT) as client:
        assert client._connection.transport.era == "legacy-sse"  # type: ignore[attr-defined]
        for _ in range(5):
            with pytest.raises(RequestTimeoutError):
                client.call_tool("slow", {"seconds": WAIT}, timeout=0.2)
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        wait_until(lambda: tables(client) == (0, 0, 0), timeout=WAIT,
                   message=lambda: tables(client))
    app.close()
