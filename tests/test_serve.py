"""``mcpsync serve``'s development server (mcpsync.http.devserver) bounds its clients:
a request's line and headers must arrive within the timeout (werkzeug closes a connection
after one response, so this bounds an idle connection too), and connections beyond the cap
get 503 without a thread.

Real sockets throughout; waits are on the sockets (a ``recv`` with a timeout), not sleeps.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsync import Client
from mcpsync.http.devserver import DevServer
from tests.helpers import wait_until
from tests.serving import free_port, serving_process

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 1.0
SLACK = 8.0  # scheduling on a loaded machine; the lower bounds are what show the limit


def hello(environ, start_response):
    if environ["PATH_INFO"] == "/slow":
        threading.Event().wait(3 * TIMEOUT)  # the application may take longer than TIMEOUT
    body = b"hello"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture
def dev() -> Iterator[DevServer]:
    httpd = DevServer("127.0.0.1", 0, hello, timeout=TIMEOUT, max_connections=3)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              name="test-devserver", daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        httpd.join_connections(SLACK)
        thread.join(SLACK)
        assert not thread.is_alive()


def connect(httpd: DevServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", httpd.server_port), timeout=SLACK)


def wait_closed(sock: socket.socket, *, trickle: bytes = b"", every: float = 0.2,
                within: float = TIMEOUT + SLACK) -> float:
    """Wait (on the socket) until the server closes it, sending one byte of ``trickle``
    every ``every`` seconds meanwhile; return how long that took."""
    started = time.monotonic()
    sock.settimeout(every)
    position = 0
    while time.monotonic() - started < within:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            if position < len(trickle):
                try:
                    sock.sendall(trickle[position:position + 1])
                except OSError:
                    return time.monotonic() - started
                position += 1
            continue
        except OSError:  # reset
            return time.monotonic() - started
        if not data:
            return time.monotonic() - started
    raise AssertionError(f"the server kept the connection open for {within} s")


def response(sock: socket.socket) -> bytes:
    sock.settimeout(SLACK)
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"hello"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        if data.startswith(b"HTTP/1.1 503"):
            break
    return data


def wait_for_connections(httpd: DevServer, count: int) -> None:
    wait_until(lambda: httpd.connection_count == count, timeout=SLACK,
               message=lambda: f"{httpd.connection_count} != {count} connections")


GET = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_headers_trickled_one_byte_at_a_time_are_cut_off_at_the_timeout(dev):
    with connect(dev) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n")
        # One byte every 0.2 s: each recv on the server sees data well within TIMEOUT, so
        # only a deadline for the whole header block ends this.
        took = wait_closed(sock, trickle=b"X-Slow: " + b"a" * 200, every=0.2)
    assert TIMEOUT * 0.8 <= took < TIMEOUT + SLACK


def test_a_silent_connection_is_closed_after_the_timeout(dev):
    with connect(dev) as sock:
        took = wait_closed(sock)
    assert TIMEOUT * 0.8 <= took < TIMEOUT + SLACK


def test_slow_but_timely_headers_and_a_slow_application_are_served(dev):
    with connect(dev) as sock:
        for piece in (b"GET /slow HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
            sock.sendall(piece)
            sock.settimeout(TIMEOUT / 5)
            with pytest.raises(socket.timeout):  # a bounded pause, waiting on the socket
                sock.recv(1)
        # The application takes 3 × TIMEOUT: waiting for it is not limited.
        assert response(sock).endswith(b"hello")


def test_connections_beyond_the_cap_get_503_without_a_thread(dev):
    wait_for_connections(dev, 0)
    held = [connect(dev) for _ in range(3)]
    try:
        for sock in held:
            sock.sendall(b"GET / HTTP/1.1\r\n")  # a request in progress holds its thread
        wait_for_connections(dev, 3)
        threads_before = threading.active_count()
        with connect(dev) as extra:
            reply = response(extra)
            assert reply.startswith(b"HTTP/1.1 503")
            assert b"too many connections at once" in reply
        assert threading.active_count() <= threads_before
        held.pop().close()
        wait_for_connections(dev, 2)
        with connect(dev) as again:
            again.sendall(GET)
            assert response(again).endswith(b"hello")
    finally:
        for sock in held:
            sock.close()


def test_many_slow_connections_are_all_dropped_and_their_threads_end():
    httpd = DevServer("127.0.0.1", 0, hello, timeout=TIMEOUT, max_connections=64)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              name="test-devserver-many", daemon=True)
    thread.start()
    try:
        socks = [connect(httpd) for _ in range(40)]
        for sock in socks:
            sock.sendall(b"GET / HTTP/1.1\r\nX-Slow: ")
        for sock in socks:
            took = wait_closed(sock)
            assert took < TIMEOUT + SLACK
            sock.close()
        wait_for_connections(httpd, 0)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(SLACK)


@pytest.mark.parametrize("kwargs", [{"timeout": 0}, {"timeout": -1.0},
                                    {"max_connections": 0}])
def test_bad_limits_are_refused(kwargs):
    with pytest.raises(ValueError):
        DevServer("127.0.0.1", 0, hello, **kwargs)


@pytest.mark.parametrize("port", [-1, 65536, 99999])
def test_serve_refuses_a_port_out_of_range(port):
    from mcpsync import Server
    from mcpsync.http import serve

    with pytest.raises(ValueError, match=r"0\.\.65535"):
        serve(Server("x"), "127.0.0.1", port)


def test_mcpsync_serve_drops_a_trickling_client_by_default_and_still_serves():
    """The command with its defaults (timeout 10 s): a client trickling header bytes is
    dropped; a real client works before and after."""
    port = free_port()
    argv = [sys.executable, "-m", "mcpsync", "serve", "examples/weather_server.py:server",
            "--port", str(port)]
    with serving_process(argv, port, cwd=ROOT, env={"PYTHONPATH": str(ROOT),
                                                    "PATH": "/usr/bin:/bin"}) as base:
        with Client.http(f"{base}/mcp", timeout=30) as client:
            assert "forecast" in [tool.name for tool in client.list_tools()]
        with socket.create_connection(("127.0.0.1", port), timeout=SLACK) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\n")
            took = wait_closed(sock, trickle=b"X-Slow: " + b"a" * 200, every=0.5,
                               within=10.0 + SLACK)
        assert 8.0 <= took < 10.0 + SLACK
        with Client.http(f"{base}/mcp", timeout=30) as client:
            assert "forecast" in [tool.name for tool in client.list_tools()]
