"""``mcpsync serve``'s development server (mcpsync.http.devserver.server) bounds its clients: a
request's line, headers and body must arrive within the timeout (an idle kept connection
lasts no longer), a connection still sending its request holds no handler thread, and
requests beyond the handler cap get 503 without a thread.

Real sockets throughout; waits are on the sockets (a ``recv`` with a timeout), not sleeps.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsync import Client
from mcpsync.http.devserver.server import DevServer
from tests.helpers import wait_until
from tests.serving import (
    free_port,
    running_devserver,
    serving_process,
    shut_down,
    wait_for_port,
)

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 1.0
SLACK = 8.0  # scheduling on a loaded machine; the lower bounds are what show the limit


HOLD = threading.Event()


def hello(environ, start_response):
    if environ["PATH_INFO"] == "/hold":
        HOLD.wait(SLACK)
    if environ["PATH_INFO"] == "/big":
        start_response("200 OK", [("Content-Type", "text/plain")])  # streamed: chunked
        return [b"x" * (1024 * 1024)] * 64
    if environ["PATH_INFO"] == "/slow":
        threading.Event().wait(3 * TIMEOUT)  # the application may take longer than TIMEOUT
    body = b"hello"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture
def dev() -> Iterator[DevServer]:
    with running_devserver(hello, timeout=TIMEOUT, max_connections=3) as httpd:
        yield httpd


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


def test_requests_beyond_the_cap_get_503_without_a_thread(dev):
    wait_for_connections(dev, 0)
    HOLD.clear()
    held = [connect(dev) for _ in range(3)]
    try:
        for sock in held:
            sock.sendall(b"GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        wait_for_connections(dev, 3)  # three requests in the application
        threads_before = threading.active_count()
        with connect(dev) as extra:
            extra.sendall(GET)
            reply = response(extra)
            assert reply.startswith(b"HTTP/1.1 503")
            assert b"too many connections at once" in reply
        assert threading.active_count() <= threads_before
        HOLD.set()
        for sock in held:
            assert response(sock).endswith(b"hello")
        wait_for_connections(dev, 0)
        with connect(dev) as again:
            again.sendall(GET)
            assert response(again).endswith(b"hello")
    finally:
        HOLD.set()
        for sock in held:
            sock.close()


def test_connections_still_sending_their_head_hold_no_handler(dev):
    """Ten times the cap of half-sent requests: each costs a buffer in the reader, not a
    handler, so a complete request is still served at once."""
    slow = [connect(dev) for _ in range(30)]
    try:
        for sock in slow:
            sock.sendall(b"GET / HTTP/1.1\r\nX-Slow: a")
        wait_until(lambda: dev.waiting_count >= 30, timeout=SLACK,
                   message=lambda: f"{dev.waiting_count} connections waiting")
        assert dev.connection_count == 0
        with connect(dev) as real:
            real.sendall(GET)
            assert response(real).endswith(b"hello")
    finally:
        for sock in slow:
            sock.close()


def test_a_kept_connection_serves_several_requests_and_then_idles_out(dev):
    with connect(dev) as sock:
        for _ in range(3):
            sock.sendall(GET)
            reply = response(sock)
            assert reply.endswith(b"hello") and b"Connection: close" not in reply
        took = wait_closed(sock)  # idle: closed at the timeout, no 408 for nothing sent
    assert TIMEOUT * 0.8 <= took < TIMEOUT + SLACK


def test_a_client_that_stops_reading_frees_its_handler_at_the_timeout(dev):
    """Each write of the response has ``timeout`` seconds in all: a client that asks for
    64 MiB and reads none of it holds its handler no longer than that."""
    with connect(dev) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        wait_for_connections(dev, 1)
        started = time.monotonic()
        wait_until(lambda: dev.connection_count == 0, timeout=TIMEOUT + SLACK,
                   message="the handler still writes to a client that reads nothing")
        assert time.monotonic() - started >= TIMEOUT * 0.5


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
        shut_down(httpd, thread)
        httpd.server_close()


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


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_mcpsync_serve_runs_the_shutdown_on_sigterm_and_sigint(tmp_path, signum):
    """``docker stop`` and systemd send SIGTERM: the server drains and runs its shutdown
    (the lifespan's exit and the on_shutdown hooks) as on Ctrl-C, and exits 0."""
    log = tmp_path / "lifespan.log"
    port = free_port()
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
           "MCPSYNC_TEST_LIFESPAN_LOG": str(log)}
    argv = [sys.executable, "-m", "mcpsync", "serve", "tests/server/lifespan_server.py:server",
            "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc=proc)
        with Client.http(f"http://127.0.0.1:{port}/mcp", timeout=30) as client:
            client.call_tool("state")  # the lifespan has started
        assert "startup" in log.read_text()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=SLACK + 10.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=SLACK)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    events = [line.split()[0] for line in log.read_text().splitlines()]
    assert "hook-down" in events and "shutdown" in events, events
