"""A real ``mcpsync serve`` under hostile clients (issue 25, items 7, 8b, 8c).

* 300 connections trickling header bytes must not shut out a real client: a connection
  costs no handler thread until its request has arrived, and the trickle is cut off by a
  deadline for the whole request (not by a per-read timeout).
* A credential sent in the query string is never printed in the access log.
* ``Content-Length: -1`` with a 64 MiB body is refused before the body is read: the
  server's peak memory does not grow with it.

Real subprocesses and sockets throughout; every wait is on a socket or the process, bounded.
"""

from __future__ import annotations

import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from mcpsync import Client
from tests.serving import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
SLACK = 8.0  # scheduling on a loaded machine, for liveness bounds only


class Served:
    """A running ``mcpsync serve`` subprocess: its port, PID and stderr file."""

    def __init__(self, proc: subprocess.Popen[Any], port: int, log: Path) -> None:
        self.proc = proc
        self.port = port
        self.log = log
        self.url = f"http://127.0.0.1:{port}/mcp"

    def status(self, field: str) -> int:
        """A ``/proc/PID/status`` field in KiB (``VmRSS``, ``VmHWM``)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {field} in /proc/{self.proc.pid}/status")

    def threads(self) -> int:
        return self.status("Threads")

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """``serve(*options)`` runs ``mcpsync serve examples/weather_server.py:server`` on a
    free port; each is stopped (SIGTERM, then SIGKILL, bounded) by PID at teardown."""
    running: list[tuple[subprocess.Popen[Any], IO[bytes]]] = []

    def start(*options: str) -> Served:
        port = free_port()
        log = tmp_path / f"serve-{port}.log"
        out = log.open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpsync", "serve", "examples/weather_server.py:server",
             "--port", str(port), *options],
            cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL, stderr=out)
        running.append((proc, out))
        wait_for_port(port, proc=proc)
        return Served(proc, port, log)

    yield start
    for proc, out in running:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
        out.close()


class Tricklers:
    """``count`` connections that each send a request head one byte every ``every``
    seconds, all driven from the calling thread with one selector."""

    def __init__(self, port: int, count: int, every: float = 0.5) -> None:
        self.every = every
        self.head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
        self.selector = selectors.DefaultSelector()
        self.sent: dict[socket.socket, int] = {}
        self.closed_at: dict[socket.socket, float] = {}
        self.started = time.monotonic()
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=SLACK)
            sock.sendall(self.head[:1])
            sock.setblocking(False)
            self.sent[sock] = 1
            self.selector.register(sock, selectors.EVENT_READ)
        self.next_trickle = time.monotonic() + every

    @property
    def open(self) -> int:
        return len(self.sent) - len(self.closed_at)

    def run(self, until: float) -> None:
        """Trickle and watch for closes until the monotonic time ``until``."""
        while (now := time.monotonic()) < until and self.open:
            for key, _ in self.selector.select(min(until, self.next_trickle) - now):
                self._drain(key.fileobj)  # type: ignore[arg-type]
            if time.monotonic() >= self.next_trickle:
                self.next_trickle += self.every
                for sock, position in self.sent.items():
                    if sock in self.closed_at:
                        continue
                    try:
                        sock.send(self.head[position:position + 1])
                        self.sent[sock] = position + 1
                    except OSError:
                        self._closed(sock)

    def _drain(self, sock: socket.socket) -> None:
        try:
            while sock.recv(65536):  # a 408 or 503, then EOF
                pass
        except BlockingIOError:
            return
        except OSError:
            pass
        self._closed(sock)

    def _closed(self, sock: socket.socket) -> None:
        if sock not in self.closed_at:
            self.closed_at[sock] = time.monotonic()
            self.selector.unregister(sock)

    def close(self) -> None:
        for sock in self.sent:
            sock.close()
        self.selector.close()


def call_forecast(url: str) -> str:
    with Client.http(url, timeout=SLACK) as client:
        result = client.call_tool("forecast", {"city": "Oslo", "days": 1})
    return str(result.content[0].text)  # type: ignore[union-attr]


def test_trickling_connections_do_not_shut_out_a_real_client(serve):
    timeout = 3.0
    served = serve("--timeout", str(timeout))
    attack = Tricklers(served.port, 300)
    try:
        attack.run(time.monotonic() + 0.6)  # one more byte on every connection
        started = time.monotonic()
        assert "Oslo" in call_forecast(served.url)
        assert time.monotonic() - started < 5.0
        assert attack.open == 300, "the real call was served during the attack"
        # A connection that is still sending its head holds no handler thread.
        assert served.threads() < 50
        # The deadline is for the whole head: trickling does not extend it.
        attack.run(attack.started + timeout + SLACK)
        assert attack.open == 0
        latest = max(attack.closed_at.values()) - attack.started
        assert timeout * 0.8 <= min(attack.closed_at.values()) - attack.started
        assert latest < timeout + SLACK
    finally:
        attack.close()
    assert "Oslo" in call_forecast(served.url)


def test_a_query_string_credential_is_not_in_the_access_log(serve):
    served = serve()
    secret = "s3cr3t-t0ken-value"
    with socket.create_connection(("127.0.0.1", served.port), timeout=SLACK) as sock:
        sock.sendall(f"GET /mcp?access_token={secret}&client_secret={secret}x&page=2 "
                     f"HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {secret}y\r\n"
                     f"Connection: close\r\n\r\n".encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 ")
    # A request line the server can not parse is logged too (as an error): redacted too.
    with socket.create_connection(("127.0.0.1", served.port), timeout=SLACK) as sock:
        sock.sendall(f"GET /mcp?token={secret}z BAD/9 extra\r\n\r\n".encode())
        while sock.recv(65536):
            pass
    assert "page=2" in served.stderr() or wait_for_log(served, "page=2")
    wait_for_log(served, "BAD/9")
    log = served.stderr()
    assert secret not in log, log
    assert "access_token=" in log  # the name stays, so the operator sees what was sent


def wait_for_log(served: Served, text: str) -> bool:
    from tests.helpers import wait_until

    wait_until(lambda: text in served.stderr(), timeout=SLACK,
               message=lambda: f"{text!r} not logged: {served.stderr()!r}")
    return True


def send_body(port: int, head: bytes, size: int) -> tuple[bytes, int]:
    """Send ``head`` and up to ``size`` body bytes; return the reply and how many body
    bytes the server took before it closed the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=SLACK)
    sent = 0
    block = b"x" * 65536
    with sock:
        sock.sendall(head)
        deadline = time.monotonic() + 4 * SLACK
        try:
            while sent < size and time.monotonic() < deadline:
                sent += sock.send(block[:size - sent])
        except OSError:
            pass  # the server closed the connection: what a refusal looks like
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except OSError:
            pass
    return reply, sent


@pytest.mark.parametrize("length", ["-1", "+67108864", "0x40", "1, 2"])
def test_a_bad_content_length_is_refused_before_the_body_is_read(serve, length):
    served = serve()
    assert "Oslo" in call_forecast(served.url)  # warmed up: the peak below is the body's
    peak_before = served.status("VmHWM")
    size = 64 * 1024 * 1024
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()
    reply, sent = send_body(served.port, head, size)
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    grown = served.status("VmHWM") - peak_before
    assert grown < 4 * 1024, f"peak memory grew by {grown} KiB for a refused body"
    assert sent < size, "the server read the whole body of a request it refused"
    assert "Oslo" in call_forecast(served.url)


def test_a_body_over_the_limit_is_refused_unread(serve):
    served = serve()
    assert "Oslo" in call_forecast(served.url)
    peak_before = served.status("VmHWM")
    size = 64 * 1024 * 1024
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    reply, sent = send_body(served.port, head, size)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert served.status("VmHWM") - peak_before < 4 * 1024
    assert sent < size



@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_server_with_connections_open(serve, signal_number):
    """Ctrl-C and SIGTERM (``docker stop``, systemd) both end ``mcpsync serve`` cleanly
    (status 0, no traceback; the lifespan's shutdown runs, see test_serve.py), with idle
    and half-sent connections open."""
    served = serve()
    assert "Oslo" in call_forecast(served.url)
    with socket.create_connection(("127.0.0.1", served.port), timeout=SLACK) as idle, \
            socket.create_connection(("127.0.0.1", served.port), timeout=SLACK) as half:
        half.sendall(b"POST /mcp HTTP/1.1\r\nX-Slow: a")
        idle.sendall(b"")
        served.proc.send_signal(signal_number)
        assert served.proc.wait(SLACK) == 0
        half.settimeout(SLACK)
        try:
            assert half.recv(1) == b""
        except ConnectionResetError:
            pass
    assert "Traceback" not in served.stderr(), served.stderr()


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_a_call_longer_than_the_timeout_is_not_taken_for_a_client_that_left(serve, version):
    """The app looks at a quiet connection twice a second to see whether its client left
    (a MSG_DONTWAIT peek). On a socket with a timeout that peek waited the whole timeout
    for data and then read the timeout as "gone": every call or stream quiet for longer
    than ``--timeout`` was cancelled while its client still waited."""
    served = serve("--timeout", "1")
    with Client.http(served.url, timeout=SLACK, protocol_version=version) as client:
        result = client.call_tool("wait", {"seconds": 2.5})
    assert not result.is_error, result
    assert result.content[0].text == "waited 2.5 s"  # type: ignore[union-attr]
