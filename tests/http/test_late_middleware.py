"""Message middleware added to (or taken from) a server whose WSGI app is already serving
applies from the next 2026-07-28 request on: the app shares one executor between requests
only while the server has no message middleware at all (``http/services.py``), and reads
the lists at every request.

And an answer (or a receive middleware's refusal) that a send middleware drops ends its
HTTP request at once, in both eras: nothing else would have ended its stream."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcpsync import Client, MCPError, Server
from mcpsync.protocol.jsonrpc import Message, Response
from tests.helpers import WAIT

from .raw import post_modern


def _server() -> Server:
    server = Server("late")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


def _echo(url: str, text: str) -> dict[str, Any]:
    response = post_modern(url, "tools/call", {"name": "echo", "arguments": {"text": text}})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_middleware_added_and_removed_while_serving(serve):
    server = _server()
    served = serve(server)
    assert _echo(served.url, "before")["result"]["content"][0]["text"] == "before"

    received: list[str] = []
    sent: list[Any] = []

    def recv(message: Message, next_: Any) -> None:
        received.append(getattr(message, "method", "?"))
        next_(message)

    def send(message: Message, next_: Any) -> None:
        sent.append(getattr(message, "id", None))
        next_(message)

    server.recv_middleware.append(recv)
    server.send_middleware.append(send)
    assert _echo(served.url, "during")["result"]["content"][0]["text"] == "during"
    assert received == ["tools/call"] and sent == [1]

    server.recv_middleware.clear()
    server.send_middleware.clear()
    assert _echo(served.url, "after")["result"]["content"][0]["text"] == "after"
    assert received == ["tools/call"] and sent == [1]


def test_a_request_the_receive_middleware_drops_is_answered(serve):
    server = _server()
    served = serve(server)

    def drop(message: Message, next_: Any) -> None:
        return None  # neither routed nor refused

    server.recv_middleware.append(drop)
    response = post_modern(served.url, "tools/call",
                           {"name": "echo", "arguments": {"text": "x"}})
    # Refused before any handler ran, with -32603: 503 by the one status table.
    assert response.status_code == 503
    body = response.json()
    assert body["id"] == 1
    assert body["error"]["code"] == -32603
    assert "dropped the request without an answer" in body["error"]["message"]


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
def test_a_refusal_the_send_middleware_drops_still_ends_the_request(serve, accept):
    # The receive middleware refuses; the send middleware drops that refusal. Nothing was
    # left to end the request's stream: a JSON-only response waited for good (SSE: kept
    # alive for good). Now the request ends without an answer, as a dropped answer does.
    server = _server()
    served = serve(server)

    def refuse(message: Message, next_: Any) -> None:
        raise MCPError("not today", code=-32600)

    def drop(message: Message, next_: Any) -> None:
        return None

    server.recv_middleware.append(refuse)
    server.send_middleware.append(drop)
    started = time.monotonic()
    response = post_modern(served.url, "tools/call",
                           {"name": "echo", "arguments": {"text": "x"}},
                           headers={"Accept": accept})
    assert time.monotonic() - started < WAIT / 2
    assert response.status_code == 503, response.text  # -32603, by the one status table
    body = response.json()
    assert body["error"]["code"] == -32603 and body["id"] == 1  # the request's own id
    assert body["error"]["message"] == "The request ended without an answer"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_an_answer_the_send_middleware_drops_fails_the_call_at_once(serve, version):
    # A send middleware may drop a message. A request's answer dropped so leaves nothing
    # to end its POST: in the 2025-11-25 era the POST was held open (and the session
    # busy) for good, and the client waited out its timeout. It ends now, as in 2026-07-28.
    server = _server()
    served = serve(server)

    def drop_results(message: Message, next_: Any) -> None:
        if isinstance(message, Response) and "content" in (message.result or {}):
            return None
        next_(message)

    server.send_middleware.append(drop_results)
    with Client.http(served.url, protocol_version=version, timeout=WAIT) as client:
        started = time.monotonic()
        with pytest.raises(MCPError) as caught:
            client.call_tool("echo", {"text": "x"})
        assert time.monotonic() - started < WAIT / 2, "the call waited out its timeout"
        assert caught.value.code == -32603
