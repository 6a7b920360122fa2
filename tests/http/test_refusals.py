"""Refusals are answers too: every JSON-RPC error the server sends, even for a request no
handler saw, goes through the server's send middleware (``InboundExecutor.reject``), on
every transport and era where such a refusal exists, with its status from the one table
(``mcpsync.http.replies``).

The bug: the HTTP router wrote its refusals (a body that is not JSON, a header that
contradicts the body, an unknown session, a forbidden Host) and the handshake era's
"already in flight" answer straight to the wire, so a middleware that signs, rewrites or
records answers never saw them.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest
import requests

from mcpsync import HandlerContext, Server
from mcpsync.errors import HEADER_MISMATCH, INVALID_REQUEST, PARSE_ERROR
from mcpsync.http.replies import SESSION_NOT_FOUND, STATUSES, answer_status
from mcpsync.protocol.jsonrpc import ErrorResponse, Message
from mcpsync.transports.stream import StreamTransport

from .conftest import Served
from .raw import BOTH, MODERN, WAIT, LegacySession, modern_headers, modern_request


class Marking:
    """A send middleware that records each error answer and marks it (``data``), as one
    that signs answers would: the client must get the marked one."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, message: Message, next_: Callable[[Message], None]) -> None:
        if isinstance(message, ErrorResponse):
            with self.lock:
                self.seen.append(dict(message.error))
            message = ErrorResponse(message.id, {**message.error, "data": "marked"})
        next_(message)

    def codes(self) -> list[int]:
        with self.lock:
            return [error["code"] for error in self.seen]


def _server(marking: Marking, release: threading.Event | None = None) -> Server:
    server = Server("refusals")
    server.send_middleware.append(marking)

    @server.tool()
    def hold(ctx: HandlerContext) -> str:
        """Run until released (bounded)."""
        assert release is not None
        release.wait(WAIT)
        return "released"

    return server


@pytest.fixture
def marking() -> Marking:
    return Marking()


def _assert_marked(response: requests.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"]["code"] == code
    assert body["error"].get("data") == "marked", body
    return body


def test_a_body_that_is_not_json_is_refused_through_send_middleware(
        serve: Callable[..., Served], marking: Marking) -> None:
    served = serve(_server(marking))
    response = requests.post(served.url, data=b'{"jsonrpc": "2.0", "id": 1, "method"',
                             headers={"Content-Type": "application/json", "Accept": BOTH},
                             timeout=WAIT)
    body = _assert_marked(response, 400, PARSE_ERROR)
    assert body["id"] is None
    assert marking.codes() == [PARSE_ERROR]


def test_a_wrong_protocol_version_header_is_refused_through_send_middleware(
        serve: Callable[..., Served], marking: Marking) -> None:
    served = serve(_server(marking))
    headers = modern_headers("tools/list", **{"MCP-Protocol-Version": "2025-11-25"})
    response = requests.post(served.url, data=json.dumps(modern_request("tools/list")),
                             headers=headers, timeout=WAIT)
    body = _assert_marked(response, 400, HEADER_MISMATCH)
    assert body["id"] == 1
    assert marking.codes() == [HEADER_MISMATCH]


def test_an_unknown_session_is_refused_through_send_middleware(
        serve: Callable[..., Served], marking: Marking) -> None:
    served = serve(_server(marking))
    response = requests.post(
        served.url, data=json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        headers={"Content-Type": "application/json", "Accept": BOTH,
                 "Mcp-Session-Id": "no-such-session"}, timeout=WAIT)
    body = _assert_marked(response, 404, SESSION_NOT_FOUND)
    assert body["id"] == 7


def test_a_forbidden_host_is_refused_through_send_middleware(
        serve: Callable[..., Served], marking: Marking) -> None:
    served = serve(_server(marking))
    response = requests.post(served.url, data=json.dumps(modern_request("tools/list")),
                             headers={**modern_headers("tools/list"), "Host": "evil.example"},
                             timeout=WAIT)
    _assert_marked(response, 403, INVALID_REQUEST)


def test_a_refusal_dropped_by_send_middleware_still_answers_the_http_request(
        serve: Callable[..., Served]) -> None:
    """HTTP answers every request: dropping works for messages that need no answer."""
    seen: list[Message] = []
    server = Server("drops")
    server.send_middleware.append(lambda message, next_: seen.append(message))
    served = serve(server)
    response = requests.post(served.url, data=b"{", timeout=WAIT,
                             headers={"Content-Type": "application/json", "Accept": BOTH})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == PARSE_ERROR
    assert len(seen) == 1 and isinstance(seen[0], ErrorResponse)


def test_a_duplicate_id_in_flight_is_refused_through_send_middleware(
        serve: Callable[..., Served], marking: Marking) -> None:
    release = threading.Event()
    served = serve(_server(marking, release))
    session = LegacySession(served.url)
    body = {"jsonrpc": "2.0", "id": 42, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}}}
    first = session.post(body, stream=True)  # an SSE stream once past the JSON window
    try:
        assert first.status_code == 200
        second = session.post(body)
        answer = _assert_marked(second, 400, INVALID_REQUEST)
        assert "already in flight" in answer["error"]["message"]
        assert answer["id"] == 42
    finally:
        release.set()
        first.close()
    assert INVALID_REQUEST in marking.codes()


def test_stdio_parse_errors_go_through_send_middleware(marking: Marking) -> None:
    """Stdio's refusals were already on this path (the engine's); kept so."""
    server = _server(marking)
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    session = server.connect(StreamTransport(to_server, os.fdopen(from_server, "wb")))
    try:
        os.write(from_client, b'{"jsonrpc": "2.0", "id": 1, "method"\n')
        with os.fdopen(to_client, "rb") as replies:
            line = replies.readline()
            reply = json.loads(line)
            assert reply["error"]["code"] == PARSE_ERROR
            assert reply["error"]["data"] == "marked"
            assert reply["id"] is None
            os.close(from_client)
            session.connection.wait_closed(WAIT)
    finally:
        session.connection.close()
    assert marking.codes() == [PARSE_ERROR]


def test_a_stdio_duplicate_id_is_refused_through_send_middleware(marking: Marking) -> None:
    """The engine's own refusal (an id already in flight) takes the same path as the HTTP
    router's: ``InboundExecutor.reject``, so the send middleware marks it."""
    release = threading.Event()
    server = _server(marking, release)
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    session = server.connect(StreamTransport(to_server, os.fdopen(from_server, "wb")))
    hold = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}}}
    try:
        with os.fdopen(to_client, "rb") as replies:
            for message in ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                                 "protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "raw", "version": "0"}}},
                            {"jsonrpc": "2.0", "method": "notifications/initialized"}):
                os.write(from_client, (json.dumps(message) + "\n").encode())
            assert json.loads(replies.readline())["id"] == 0
            os.write(from_client, (json.dumps(hold) + "\n").encode())
            os.write(from_client, (json.dumps(hold) + "\n").encode())
            refused = json.loads(replies.readline())
            assert refused["id"] == 7
            assert refused["error"]["code"] == INVALID_REQUEST
            assert "already in flight" in refused["error"]["message"]
            assert refused["error"]["data"] == "marked"
            release.set()
            answered = json.loads(replies.readline())
            assert answered["id"] == 7 and answered["result"]["content"][0]["text"] == "released"
            os.close(from_client)
            session.connection.wait_closed(WAIT)
    finally:
        release.set()
        session.connection.close()
    assert marking.codes() == [INVALID_REQUEST]


def test_one_table_gives_every_status() -> None:
    """The eras differ only where the spec makes them differ: an unknown method is a 404
    in 2026-07-28 and a JSON-RPC error in a 200 in the handshake era."""
    assert answer_status(-32601, modern=True) == "404 Not Found"
    assert answer_status(-32601, modern=False) == "200 OK"
    assert answer_status(-32602, modern=True) == "200 OK"  # an unknown tool: a body error
    assert answer_status(PARSE_ERROR, modern=False) == "400 Bad Request"
    assert answer_status("not a code", modern=True) == "200 OK"
    assert STATUSES[SESSION_NOT_FOUND].refused == "404 Not Found"
    assert MODERN == "2026-07-28"
