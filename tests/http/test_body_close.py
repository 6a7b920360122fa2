"""Every clean-up the app hangs on a streamed body runs even when the WSGI server never
calls the body's ``close()``.

PEP 3333 says the server calls it; werkzeug's own server skips it when its read of the
rest of the request, after the last chunk, fails: a client that resets the connection as
soon as it has read its answer. That clean-up lets go of a finished stream's stored events
(handshake era), ends a 2024-11-05 session, and cancels an abandoned 2026-07-28 call. The
first test is the real server and a real reset; the others drive the app as a server that
forgets ``close()`` would, to pin each era's clean-up down without a race.
"""

from __future__ import annotations

import gc
import json
import socket
import struct
import threading
from collections.abc import Iterable
from typing import Any

from werkzeug.test import EnvironBuilder

from mcpsync import HandlerContext, Server
from tests.helpers import wait_until

from .raw import BOTH, LEGACY, WAIT, LegacySession, modern_headers, modern_request


def test_a_client_that_resets_after_its_answer_leaves_nothing_stored(serve):
    served = serve()
    session = LegacySession(served.url)
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "progress", "arguments": {"steps": 50},
                                  "_meta": {"progressToken": 7}}}).encode()
    host, port = served.base.removeprefix("http://").split(":")
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: {BOTH}\r\nMcp-Session-Id: {session.session_id}\r\n"
            f"MCP-Protocol-Version: {LEGACY}\r\nContent-Length: {len(body)}\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=WAIT) as sock:
        sock.sendall(head.encode() + body)
        received = b""
        while b'"id":7' not in received:  # the answer, the stream's last event
            data = sock.recv(65536)
            assert data, "the server closed the stream before the answer"
            received += data
        assert b"text/event-stream" in received.split(b"\r\n\r\n", 1)[0]
        # A reset, not a FIN: the server's next read of this socket fails.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    wait_until(lambda: served.app.store.size_bytes == 0, timeout=WAIT,
               message=lambda: f"{served.app.store.size_bytes} bytes still stored")


# -- a server that iterates the body and never calls close() -------------------------------


def _call(app: Any, method: str, path: str, body: Any = None,
          headers: dict[str, str] | None = None) -> tuple[str, dict[str, str], Iterable[bytes]]:
    """Call the WSGI app as a server would, but hand back the body unclosed."""
    environ = EnvironBuilder(path=path, method=method, headers=headers or {}, multithread=True,
                             data=None if body is None else json.dumps(body)).get_environ()
    started: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Any:
        started["status"], started["headers"] = status, dict(response_headers)
        return lambda data: None

    result = app(environ, start_response)
    return started["status"], started["headers"], result


def _legacy_headers(session_id: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": BOTH,
               "MCP-Protocol-Version": LEGACY}
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    return headers


def _open_session(app: Any) -> str:
    status, headers, result = _call(app, "POST", "/mcp", {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "no-close", "version": "0"}}}, _legacy_headers())
    assert status.startswith("200"), b"".join(result)
    session_id = headers["Mcp-Session-Id"]
    status, _, _ = _call(app, "POST", "/mcp", {"jsonrpc": "2.0",
                                                "method": "notifications/initialized"},
                         _legacy_headers(session_id))
    assert status.startswith("202")
    return session_id


def _slow_progress_server(go: threading.Event) -> Server:
    srv = Server("no-close")

    @srv.tool()
    def slow(ctx: HandlerContext, steps: int = 20) -> str:
        for i in range(steps):
            ctx.progress(i + 1, total=steps)
            if i == 0:
                go.wait(WAIT)  # the answer comes after the JSON window: an SSE stream
        return "done"

    return srv


def test_a_stream_read_to_its_end_without_close_lets_go_of_its_events():
    go = threading.Event()
    app = _slow_progress_server(go).wsgi_app(path="/mcp", json_window=0.0)
    try:
        session_id = _open_session(app)
        _, headers, result = _call(app, "POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "slow", "_meta": {"progressToken": 1}}},
            _legacy_headers(session_id))
        assert headers["Content-Type"] == "text/event-stream"
        go.set()
        streamed = b"".join(result)  # to the end; close() is never called
        assert b'"result"' in streamed
        assert app.store.size_bytes == 0
    finally:
        app.close()


def test_a_dropped_2026_stream_cancels_its_call():
    started, cancelled = threading.Event(), threading.Event()
    srv = Server("no-close")

    @srv.tool()
    def wait_for_cancel(ctx: HandlerContext) -> str:
        ctx.progress(0)  # something to stream: the body has a first chunk
        started.set()
        if ctx.cancelled.wait(WAIT):
            cancelled.set()
        return "cancelled" if cancelled.is_set() else "not cancelled"

    app = srv.wsgi_app(path="/mcp", json_window=0.0)
    try:
        request = modern_request("tools/call", {"name": "wait_for_cancel"})
        request["params"]["_meta"]["progressToken"] = 1
        status, headers, result = _call(app, "POST", "/mcp", request,
                                        modern_headers("tools/call", "wait_for_cancel"))
        assert status.startswith("200") and headers["Content-Type"] == "text/event-stream"
        assert started.wait(WAIT)
        next(iter(result))
        del result  # the server lost the client and drops the body, unclosed
        gc.collect()
        assert cancelled.wait(WAIT), "the call was not cancelled"
    finally:
        app.close()


def test_a_dropped_2024_stream_ends_its_session():
    app = Server("no-close").wsgi_app(path="/mcp")
    try:
        status, _, result = _call(app, "GET", "/sse", headers={
            "Accept": "text/event-stream"})
        assert status.startswith("200")
        assert b"event: endpoint" in next(iter(result))
        assert len(app.sessions) == 1
        del result
        gc.collect()
        assert len(app.sessions) == 0
    finally:
        app.close()
