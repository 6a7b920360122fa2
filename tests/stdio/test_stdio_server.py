"""A real stdio server subprocess fed raw bytes: the spec's answers, and nothing else on stdout."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import WAIT
from tests.spec import validate_message

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"


class RawServer:
    """The fixture server as a child process, with stdout read line by line on a thread."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, str(FIXTURE)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        self._err_reader = threading.Thread(target=self._read_err, daemon=True,
                                            name="t-stderr")
        self._err_reader.start()

    def _read(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self) -> None:
        self.stderr = self.proc.stderr.read()

    def send(self, data: bytes | dict) -> None:
        if isinstance(data, dict):
            data = json.dumps(data).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> dict:
        line = self.lines.get(timeout=WAIT)
        assert line is not None, "server closed stdout"
        message = json.loads(line)  # every stdout line must be JSON
        return message

    def initialize(self, version: str = "2025-11-25") -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": version, "capabilities": {},
                              "clientInfo": {"name": "raw", "version": "0"}}})
        assert self.recv()["result"]["protocolVersion"] == version
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            # stderr is whole only once its reader has seen EOF (after the exit, not at it)
            self._err_reader.join(WAIT)


@pytest.fixture
def raw():
    server = RawServer()
    yield server
    server.close()


def call(id_, name, arguments=None):
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def test_bad_input_gets_the_spec_answer_and_the_server_keeps_serving(raw):
    raw.initialize()
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"')  # malformed JSON
    reply = raw.recv()
    assert reply["error"]["code"] == -32700 and reply["id"] is None
    validate_message("2025-11-25", reply)

    raw.send({"jsonrpc": "2.0", "id": 2, "method": "no/such"})
    reply = raw.recv()
    assert reply == {"jsonrpc": "2.0", "id": 2, "error": reply["error"]}
    assert reply["error"]["code"] == -32601

    raw.send(call(3, "no_such_tool"))
    assert raw.recv()["error"]["code"] == -32602

    raw.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": ["add"]})
    reply = raw.recv()
    assert reply["id"] == 4 and reply["error"]["code"] == -32600

    raw.send(call(5, "add", {"a": "one", "b": 2}))
    reply = raw.recv()
    assert reply["id"] == 5 and reply["result"]["isError"] is True
    validate_message("2025-11-25", reply, "tools/call")

    raw.send(b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":"' + b"x" * (64 << 20)
             + b'"}}')
    reply = raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    assert "exceeds" in reply["error"]["message"]

    raw.send(b"[]")
    assert raw.recv()["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "id": True, "method": "ping"})
    assert raw.recv()["error"]["code"] == -32600

    raw.send(call(7, "add", {"a": 1, "b": 2}))
    reply = raw.recv()
    assert reply["id"] == 7 and reply["result"]["structuredContent"] == {"result": 3}
    assert raw.close() == 0  # EOF ends the process, cleanly


def test_stdout_carries_only_protocol_messages(raw):
    raw.initialize()
    raw.send(call(1, "chatty"))
    seen = []
    while True:
        message = raw.recv()  # json.loads would fail on a stray print
        seen.append(message)
        if message.get("id") == 1:
            break
    assert seen[-1]["result"]["content"][0]["text"] == "said things"
    assert [m["params"]["level"] for m in seen[:-1]] == ["debug", "info", "warning", "error"]
    raw.close()
    assert b"this goes to stderr" in raw.stderr
    assert b"raw fd 1 write" in raw.stderr


def test_answers_for_piped_requests_are_written_before_exit():
    """A script that writes requests and closes stdin at once still gets its answers."""
    server = RawServer()
    server.initialize()
    server.send(call(1, "block", {"seconds": 0.3}))
    server.proc.stdin.close()
    assert server.recv()["result"]["content"][0]["text"] == "done"
    assert server.close() == 0


def test_sigterm_exits_cleanly_while_a_tool_runs(raw):
    raw.initialize()
    raw.send(call(1, "slow", {"seconds": 30}))
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert raw.recv()["id"] == 2  # the slow tool does not block other requests
    raw.proc.send_signal(signal.SIGTERM)
    assert raw.proc.wait(WAIT) == 0


def test_eof_with_a_tool_running_exits_after_cancelling_it(raw):
    raw.initialize()
    raw.send(call(1, "slow", {"seconds": 60}))
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert raw.recv()["id"] == 2
    assert raw.close() == 0


LAUNCHER = """
import os, subprocess, sys
# The host: starts the server on pipes this test made, and when told to, dies at once
# without closing them (the test still holds the other ends, so the server sees no EOF).
stdin_r, stdout_w = int(sys.argv[1]), int(sys.argv[2])
subprocess.Popen([sys.executable, sys.argv[3]], stdin=stdin_r, stdout=stdout_w,
                 stderr=subprocess.DEVNULL, pass_fds=(stdin_r, stdout_w))
sys.stdin.readline()
os._exit(0)
"""


def test_server_exits_when_its_parent_dies_without_closing_stdin():
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(stdin_r), str(stdout_w), str(FIXTURE)],
        pass_fds=(stdin_r, stdout_w), stdin=subprocess.PIPE, env=env)
    os.close(stdin_r)
    os.close(stdout_w)
    lines: queue.Queue[bytes | None] = queue.Queue()

    def drain() -> None:
        with os.fdopen(stdout_r, "rb", buffering=0) as out:
            for line in out:
                lines.put(line)
        lines.put(None)  # EOF: the server (the only writer left) has exited

    threading.Thread(target=drain, name="orphan-stdout", daemon=True).start()
    try:
        os.write(stdin_w, json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}).encode() + b"\n")
        first = lines.get(timeout=WAIT)
        assert first is not None and json.loads(first)["id"] == 0  # serving
        assert launcher.stdin is not None
        launcher.stdin.write(b"die\n")
        launcher.stdin.close()
        assert launcher.wait(WAIT) == 0
        # Orphaned, with our stdin pipe still open: it must notice and exit.
        assert lines.get(timeout=WAIT) is None, "the orphaned stdio server kept running"
    finally:
        os.close(stdin_w)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(WAIT)
