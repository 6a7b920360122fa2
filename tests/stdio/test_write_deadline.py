"""A stdio client's writes end by the call's deadline, as its wait for the answer does.

A server that stops reading its stdin lets the pipe fill (64 KiB), and a blocking write
then waits for ever: ``call_tool(..., timeout=2)`` with a big argument used to hang, and
every later write (other threads' calls, cancellations) queued behind it. A message cut
short can not be taken back, so: nothing written by the deadline is a clean
``RequestTimeoutError`` and the connection lives; part of it written ends the connection,
and every call waiting on it says why. ``deaf_server.py`` is a real child process that
stops reading once connected.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, ConnectionClosedError, RequestTimeoutError
from mcpsync.transports.subprocess import SubprocessTransport
from tests.helpers import WAIT

pytestmark = pytest.mark.skipif(not hasattr(os, "set_blocking") or sys.platform == "win32",
                                reason="write deadlines need poll() on a pipe")

ROOT = Path(__file__).resolve().parents[2]
DEAF = ROOT / "tests" / "stdio" / "deaf_server.py"
SLACK = 1.5  # thread start-up and a loaded CI machine
BIG = "x" * 300_000  # far more than a pipe holds


class Stderr:
    """The child's stderr, with an event per line that was seen."""

    def __init__(self) -> None:
        self.text = ""
        self.lock = threading.Lock()
        self.seen: dict[str, threading.Event] = {
            "deaf": threading.Event(), "resumed": threading.Event()}

    def write(self, text: str) -> int:
        with self.lock:
            self.text += text
        for line in text.splitlines():
            if line in self.seen:
                self.seen[line].set()
        return len(text)

    def flush(self) -> None:
        pass


def deaf_client(*args: str) -> tuple[Client, Stderr]:
    sink = Stderr()
    client = Client.stdio([sys.executable, str(DEAF), *args], stderr=sink,  # type: ignore[arg-type]
                          timeout=WAIT)
    assert sink.seen["deaf"].wait(WAIT), sink.text
    return client, sink


def process_of(client: Client) -> Any:
    transport = client._connection.transport
    assert isinstance(transport, SubprocessTransport)
    return transport.process


class Outcome:
    """A call run on a thread of its own: what it raised or returned, and when it ended."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.took = -1.0
        self._call = call
        self._thread = threading.Thread(target=self._run, name="test-call", daemon=True)
        self._started = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        try:
            self.value = self._call()
        except BaseException as exc:
            self.error = exc
        self.took = time.monotonic() - self._started

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()


def test_a_big_argument_to_a_server_that_stopped_reading_ends_by_the_timeout():
    client, _ = deaf_client()
    process = process_of(client)
    try:
        call = Outcome(lambda: client.call_tool("anything", {"data": BIG}, timeout=2))
        assert call.join(2 + SLACK + 5), "call_tool(timeout=2) still blocked writing"
        # Part of the message went into the pipe: it can not be taken back, so the
        # connection ends, and the error says why.
        assert isinstance(call.error, ConnectionClosedError), call.error
        assert call.took < 2 + SLACK, call.took
        assert "stopped reading" in str(call.error)
        assert "tools/call" in str(call.error)
    finally:
        started = time.monotonic()
        client.close()
        closing = time.monotonic() - started
    # close(): stdin closed, 2 s for the child to exit (it does not read, so it does not
    # see EOF), then SIGTERM: bounded, and the child is reaped.
    assert closing < 2 + SLACK + 1, closing
    assert process.returncode is not None


def test_other_threads_calls_end_by_their_own_deadlines():
    client, _ = deaf_client()
    try:
        big = Outcome(lambda: client.call_tool("big", {"data": BIG}, timeout=3))
        short = Outcome(lambda: client.call_tool("short", {}, timeout=1))
        long = Outcome(lambda: client.call_tool("long", {}, timeout=8))
        for outcome in (big, short, long):
            assert outcome.join(8 + SLACK + 5), "a call is still blocked"
        assert isinstance(big.error, ConnectionClosedError), big.error
        assert big.took < 3 + SLACK
        # The short call either never got its turn to write (a clean timeout) or was
        # written before the big one and timed out waiting; its cancellation then waits
        # at most 1 s for its turn.
        assert isinstance(short.error, RequestTimeoutError), short.error
        assert short.took < 1 + 1 + SLACK, short.took
        # The long one ends when the big one ends the connection, saying why.
        assert isinstance(long.error, ConnectionClosedError), long.error
        assert not isinstance(long.error, RequestTimeoutError)
        assert long.took < 3 + SLACK, long.took
        assert "stopped reading" in str(long.error)
        with pytest.raises(ConnectionClosedError):
            client.call_tool("after", {}, timeout=WAIT)
    finally:
        client.close()


def test_a_call_that_could_not_be_written_at_all_times_out_and_the_connection_lives():
    if not sys.platform.startswith("linux"):
        pytest.skip("shrinks a pipe with F_SETPIPE_SZ (Linux)")
    import fcntl

    client, sink = deaf_client("--pipe-size", "4096", "--resume-on-usr1")
    process = process_of(client)
    try:
        assert process.stdin is not None
        room = fcntl.fcntl(process.stdin.fileno(), fcntl.F_GETPIPE_SZ)
        # One notification (written whole: nothing waits for it) nearly fills the pipe.
        client.notify("notifications/padding", {"pad": "p" * (room - 200)})
        # A request of 1000 bytes (written whole or not at all: fewer than PIPE_BUF) can
        # not go in: its deadline passes before any byte is written.
        call = Outcome(lambda: client.call_tool("never_sent", {"pad": "q" * 900}, timeout=1))
        assert call.join(1 + SLACK + 5), "call_tool(timeout=1) still blocked writing"
        assert isinstance(call.error, RequestTimeoutError), call.error
        assert call.took < 1 + SLACK, call.took
        assert "could not be sent" in str(call.error)
        assert not client.closed
        # The server reads again: the connection is whole, and the request that timed out
        # never reached it (no half line, and no cancellation for it either).
        os.kill(process.pid, signal.SIGUSR1)
        assert sink.seen["resumed"].wait(WAIT)
        result = client.call_tool("after", {}, timeout=WAIT)
        assert result.content[0].text == "calls seen: 1"  # type: ignore[union-attr]
    finally:
        client.close()


def test_a_notification_to_a_server_that_stopped_reading_ends_the_connection_by_its_bound():
    # No caller deadline: the transport's own bound (write_timeout) applies, and a peer
    # that reads nothing for that long is treated as gone.
    client, _ = deaf_client()
    transport = client._connection.transport
    assert isinstance(transport, SubprocessTransport)
    transport.write_timeout = 1.0
    try:
        sent = Outcome(lambda: client.notify("notifications/padding", {"pad": BIG}))
        assert sent.join(1 + SLACK + 5), "notify() still blocked writing"
        assert isinstance(sent.error, ConnectionClosedError), sent.error
        assert sent.took < 1 + SLACK
        assert "stopped reading" in str(sent.error)
    finally:
        client.close()


# -- the server side: a host that stops reading the server's stdout ----------------------

SERVER = '''\
import logging

from mcpsync import Server

logging.basicConfig(level=logging.WARNING)

server = Server("stalled")


@server.tool()
def big() -> str:
    """200 KB of text: three answers fill the host's pipe."""
    return "y" * 200_000


server.run_stdio(write_timeout=1.0)
'''


def test_a_server_whose_host_stopped_reading_ends_the_session_by_its_write_bound(tmp_path):
    script = tmp_path / "stalled_server.py"
    script.write_text(SERVER)
    stderr = (tmp_path / "stderr.txt").open("w+b")
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            proc.stdin.flush()

        send({"id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "host", "version": "0"}}})
        assert json.loads(proc.stdout.readline())["id"] == 0
        send({"method": "notifications/initialized"})
        # From here on the host reads nothing: twenty answers of 200 KB each, handler
        # threads all waiting their turn to write.
        started = time.monotonic()
        for n in range(1, 21):
            send({"id": n, "method": "tools/call", "params": {"name": "big", "arguments": {}}})
        # The first answer that cannot be written within 1 s ends the session; the
        # process exits (2 s of drain at most for the handlers, which fail at once).
        try:
            proc.wait(1 + 2 + SLACK + 2)
        except subprocess.TimeoutExpired:
            pytest.fail("the server still runs, its handlers blocked writing to a host "
                        "that stopped reading")
        took = time.monotonic() - started
        assert proc.returncode == 0
        assert took < 1 + 2 + SLACK, took
        stderr.seek(0)
        log = stderr.read().decode()
        assert "stopped reading" in log, log
        assert "Traceback" not in log, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
        stderr.close()
