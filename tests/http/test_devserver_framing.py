"""The development server reads whole requests before a handler runs them: its framing
(Content-Length, chunked, 100-continue, pipelining, keep-alive) and its bounds on the
connections waiting in its reader. An in-process ``DevServer`` serving the MCP fixture
server, real sockets.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from mcpsync.http.devserver.server import DevServer
from tests.helpers import wait_until
from tests.http.test_hardening import _framing_cases, _raw_exchange
from tests.server.fixture_server import server as fixture_server
from tests.serving import running_devserver

from .raw import WAIT, modern_headers, modern_request


@pytest.fixture
def dev() -> Iterator[DevServer]:
    app = fixture_server.wsgi_app(path="/mcp", max_body_bytes=64 * 1024)
    try:
        with running_devserver(app, timeout=3.0, max_connections=8, max_waiting=20,
                               max_waiting_bytes=512 * 1024) as httpd:
            yield httpd
    finally:
        app.close()


def head(port: int, framing: str, *, extra: str = "") -> bytes:
    headers = modern_headers("tools/call", "echo")
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + extra + framing + "\r\n").encode()


def echo_body(text: str) -> bytes:
    return json.dumps(modern_request("tools/call", {"name": "echo",
                                                    "arguments": {"text": text}})).encode()


def closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (waiting on it at most WAIT seconds)."""
    sock.settimeout(WAIT)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_malformed_framing_is_refused_as_the_app_would(dev):
    """The cases the app itself passes on werkzeug and gunicorn (test_hardening), now
    answered by the reader before the app runs: 400/413 with a JSON-RPC body."""
    _framing_cases(dev.server_port, server_owns_negative=False)


def test_a_chunked_body_is_served(dev):
    body = echo_body("chunked")
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                       for part in (body[:10], body[10:])) + b"0\r\n\r\n"
    status, reply = _raw_exchange(dev.server_port,
                                  head(dev.server_port, "Transfer-Encoding: chunked\r\n")
                                  + chunked)
    assert status == 200 and b"chunked" in reply, reply


@pytest.mark.parametrize("framing", [
    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",  # which one ends the body?
    "Transfer-Encoding: gzip, chunked\r\n",
    "Content-Length: 5\r\nContent-Length: 6\r\n",
])
def test_ambiguous_framing_is_refused_unread(dev, framing):
    status, reply = _raw_exchange(dev.server_port, head(dev.server_port, framing) + b"x" * 5)
    assert status in (400, 501), reply
    assert json.loads(reply)["error"]["code"] == -32600


def test_expect_100_continue_is_answered_before_the_body(dev):
    body = echo_body("continued")
    with socket.create_connection(("127.0.0.1", dev.server_port), timeout=WAIT) as sock:
        sock.sendall(head(dev.server_port, f"Content-Length: {len(body)}\r\n",
                          extra="Expect: 100-continue\r\n"))
        interim = sock.recv(65536)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim
        sock.sendall(body)
        data = interim[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
        while b"continued" not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    assert data.startswith(b"HTTP/1.1 200")


def test_pipelined_requests_on_a_kept_connection_are_answered_in_order(dev):
    requests = b"".join(head(dev.server_port, f"Content-Length: {len(b)}\r\n") + b
                        for b in (echo_body("first"), echo_body("second")))
    with socket.create_connection(("127.0.0.1", dev.server_port), timeout=WAIT) as sock:
        sock.sendall(requests)
        data = b""
        while b"second" not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    assert data.count(b"HTTP/1.1 200") == 2
    assert data.index(b"first") < data.index(b"second")


def test_the_oldest_waiting_connection_is_dropped_past_the_bound(dev):
    """max_waiting=20: a 21st half-sent request drops the first; a real one is served."""
    socks = [socket.create_connection(("127.0.0.1", dev.server_port), timeout=WAIT)
             for _ in range(21)]
    try:
        for sock in socks:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nX-Slow: a")
        assert closed(socks[0])  # the oldest
        wait_until(lambda: dev.waiting_count == 20, timeout=WAIT,
                   message=lambda: f"{dev.waiting_count} waiting")
        body = echo_body("served")
        status, reply = _raw_exchange(dev.server_port, head(
            dev.server_port, f"Content-Length: {len(body)}\r\n") + body)
        assert status == 200 and b"served" in reply
    finally:
        for sock in socks:
            sock.close()


def test_the_buffered_bytes_of_waiting_connections_are_bounded(dev):
    """max_waiting_bytes=512 KiB: bodies of 60 KiB each (under the 64 KiB body limit),
    sent but for their last byte, by 12 clients: the oldest are dropped as the total
    passes the bound."""
    size = 60 * 1024
    socks = [socket.create_connection(("127.0.0.1", dev.server_port), timeout=WAIT)
             for _ in range(12)]
    try:
        for sock in socks:
            sock.sendall(head(dev.server_port, f"Content-Length: {size}\r\n")
                         + b"x" * (size - 1))
        assert closed(socks[0])
        wait_until(lambda: dev.waiting_count <= 512 // 60, timeout=WAIT,
                   message=lambda: f"{dev.waiting_count} waiting")
        socks[-1].settimeout(WAIT)
        socks[-1].sendall(b"x")  # the newest is complete now: answered (400: not JSON)
        assert socks[-1].recv(12).startswith(b"HTTP/1.1 400")
    finally:
        for sock in socks:
            sock.close()


class _UnreadableInput:
    """A ``wsgi.input`` that fails the test if the app reads it."""

    def read(self, *args: object) -> bytes:
        raise AssertionError("the app read a body it should have refused unread")

    readline = read


@pytest.mark.parametrize("length", ["-1", "+5", "0x40", "1_0", " 7 8", "99999999999999999999"])
def test_the_app_refuses_a_bad_content_length_unread(length):
    """Behind any WSGI server (not only this one) the app refuses it before reading."""
    app = fixture_server.wsgi_app(path="/mcp")
    try:
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "SERVER_NAME": "127.0.0.1",
                   "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http",
                   "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": length,
                   "HTTP_ACCEPT": "application/json, text/event-stream",
                   "wsgi.input": _UnreadableInput(), "wsgi.multithread": True}
        environ.update({f"HTTP_{k.upper().replace('-', '_')}": v
                        for k, v in modern_headers("tools/call", "echo").items()
                        if k.lower() not in ("content-type", "accept")})
        statuses: list[str] = []
        body = b"".join(app(environ, lambda status, headers, exc=None: statuses.append(status)))
        status = statuses[0]
        assert status.startswith(("400", "413")), (status, body)
        assert json.loads(body)["error"]["code"] == -32600
    finally:
        app.close()
