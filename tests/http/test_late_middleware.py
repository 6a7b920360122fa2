"""Message middleware added to (or taken from) a server whose WSGI app is already serving
applies from the next 2026-07-28 request on: the app shares one executor between requests
only while the server has no message middleware at all (``http/services.py``), and reads
the lists at every request."""

from __future__ import annotations

from typing import Any

from mcpsync import Server
from mcpsync.protocol.jsonrpc import Message

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
