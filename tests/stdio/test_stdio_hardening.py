"""Issue #11 over real stdio: hostile lines get answers and the server keeps serving; a
signal during the final drain ends it quietly."""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpsync.protocol.jsonrpc import MAX_DEPTH
from tests.helpers import WAIT

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "server" / "hardening_server.py"


class Child:
    """The hardening server as a child process; stdout and stderr read line by line."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.errors: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[bytes] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines, None),
                             name="test-stdout", daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.errors,
                                                      self.stderr),
                             name="test-stderr", daemon=True)]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _pump(stream: Any, out: queue.Queue[bytes | None], keep: list[bytes] | None) -> None:
        for line in iter(stream.readline, b""):
            if keep is not None:
                keep.append(line)
            out.put(line)
        out.put(None)

    def send(self, data: bytes | dict[str, Any]) -> None:
        if isinstance(data, dict):
            data = json.dumps(data).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        line = self.lines.get(timeout=WAIT)
        assert line is not None, "the server closed stdout (it stopped serving)"
        message: dict[str, Any] = json.loads(line.decode("utf-8"))  # strict UTF-8 JSON
        return message

    def answer(self, request_id: Any) -> dict[str, Any]:
        """The answer to ``request_id``, skipping notifications before it."""
        while True:
            message = self.recv()
            if "method" not in message:
                assert message.get("id") == request_id, message
                return message

    def call(self, request_id: Any, method: str, params: dict[str, Any] | None = None,
             ) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        self.send(body)
        return self.answer(request_id)

    def wait_stderr(self, text: bytes) -> None:
        while True:
            line = self.errors.get(timeout=WAIT)
            assert line is not None, "stderr closed"
            if text in line:
                return

    def initialize(self) -> None:
        reply = self.call(0, "initialize", {"protocolVersion": "2025-11-25",
                                            "capabilities": {},
                                            "clientInfo": {"name": "raw", "version": "0"}})
        assert reply["result"]["protocolVersion"] == "2025-11-25"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def still_serving(self) -> None:
        assert self.call("alive", "ping") == {"jsonrpc": "2.0", "id": "alive", "result": {}}

    def close(self) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for thread in self._threads:
            thread.join(WAIT)
        return code

    def tracebacks(self) -> bytes:
        return b"".join(line for line in self.stderr if b"Traceback" in line)


@pytest.fixture
def child():
    process = Child()
    yield process
    process.close()


def nested(levels: int) -> bytes:
    """``levels`` arrays inside one another."""
    return b"[" * levels + b"]" * levels


def test_deep_nesting_is_refused_at_any_depth_and_the_server_keeps_serving(child):
    child.initialize()
    # 1000 levels: deeper than the JSON parser goes (it used to end the server). Still
    # answered by id, like any message nested past the limit.
    child.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + nested(1000) + b"}}")
    reply = child.recv()
    assert reply["id"] == 1 and reply["error"]["code"] == -32600
    assert str(MAX_DEPTH) in reply["error"]["message"]
    child.still_serving()
    # Deep and not JSON at all: a parse error with id null.
    child.send(b'{"x":' * 5000)
    reply = child.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    child.still_serving()
    # One level over the limit (message object 1, params 2, then the arrays): -32600, by id.
    child.send(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":'
               + nested(MAX_DEPTH - 1) + b"}}")
    reply = child.recv()
    assert reply["id"] == 2 and reply["error"]["code"] == -32600
    # At the limit: served.
    child.send(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":'
               + nested(MAX_DEPTH - 2) + b"}}")
    assert child.recv() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    # A notification too deep has nobody to answer, however deep it is; a tool call's
    # arguments too deep do.
    child.send(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"x":'
               + nested(MAX_DEPTH) + b"}}")
    child.send(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"x":'
               + nested(5000) + b"}}")
    arguments = {"text": "a"}
    for _ in range(MAX_DEPTH):
        arguments = {"text": arguments}  # type: ignore[dict-item]
    reply = child.call(4, "tools/call", {"name": "echo", "arguments": arguments})
    assert reply["error"]["code"] == -32600
    # A result nested too deep to encode: an answer all the same.
    reply = child.call(5, "tools/call", {"name": "deep", "arguments": {"levels": 5000}})
    assert "error" in reply or reply["result"]["isError"] is True
    child.still_serving()
    assert child.close() == 0


def test_unencodable_answers_become_errors_and_the_connection_lives(child):
    child.initialize()
    # A lone surrogate in a tool's result or isError text: an isError result saying so
    # (the model reads it like any tool failure); in an error message: escaped.
    reply = child.call(1, "tools/call", {"name": "echo", "arguments": {"text": "a\ud800b"}})
    assert reply["result"]["isError"] is True
    assert "surrogate" in reply["result"]["content"][0]["text"]
    reply = child.call(2, "tools/call", {"name": "fail", "arguments": {"text": "\ud800"}})
    assert reply["result"]["isError"] is True
    reply = child.call(3, "tools/call", {"name": "refuse", "arguments": {"text": "x\ud800"}})
    assert reply["error"] == {"code": -32602, "message": "x\\ud800"}
    # NaN, and a log message that cannot be sent (its tool learns, and says so).
    reply = child.call(4, "tools/call", {"name": "not_a_number"})
    assert reply["result"]["isError"] is True
    reply = child.call(5, "tools/call", {"name": "say", "arguments": {"text": "\udfff"}})
    assert reply["result"]["isError"] is True
    assert "surrogate" in reply["result"]["content"][0]["text"]
    # A lone surrogate in the id: the caller gets its id back (escaped on the wire).
    assert child.call("\ud800", "ping") == {"jsonrpc": "2.0", "id": "\ud800", "result": {}}
    # ... also when that id is a duplicate of one in flight (this used to end the server).
    child.send({"jsonrpc": "2.0", "id": "\udbff", "method": "tools/call",
                "params": {"name": "nap", "arguments": {"seconds": 60}}})
    reply = child.call("\udbff", "ping")
    assert reply["error"]["code"] == -32600
    child.still_serving()
    child.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "\udbff"}})
    child.still_serving()
    assert child.close() == 0


def _cursor(digits: int) -> str:
    return base64.urlsafe_b64encode(b"mcpsync:" + b"1" * digits).decode()


def test_bad_params_are_invalid_params_without_a_traceback(child):
    child.initialize()
    bad: list[tuple[str, dict[str, Any]]] = [
        ("tools/list", {"cursor": _cursor(5000)}),
        ("prompts/list", {"cursor": _cursor(30)}),
        ("resources/list", {"cursor": "x" * 100_000}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "name", "value": "A"},
                                 "context": {"arguments": [1]}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "name", "value": "A"},
                                 "context": {"arguments": {"x": 1}}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "name", "value": "A"},
                                 "context": "nope"}),
        ("tools/call", {"name": "echo", "arguments": {"text": "a"},
                        "_meta": {"progressToken": [1]}}),
        ("tools/call", {"name": "echo", "arguments": {"text": "a"},
                        "_meta": {"progressToken": {"a": 1}}}),
        ("tools/call", {"name": "echo", "arguments": {"text": "a"},
                        "_meta": {"progressToken": "\ud800"}}),
        ("tools/call", {"name": "echo", "arguments": {"text": "a"}, "_meta": [1]}),
        ("tools/list", {"_meta": "x"}),
        ("tools/call", {"name": ["echo"]}),
        ("prompts/get", {"name": "greet", "arguments": ["Ada"]}),
        ("resources/read", {"uri": 5}),
        ("logging/setLevel", {"level": ["debug"]}),
    ]
    for number, (method, params) in enumerate(bad, 1):
        reply = child.call(number, method, params)
        assert reply["error"]["code"] == -32602, (method, params, reply)
    for token in ([1], {"a": 1}, None, 1.5):
        child.send({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1}})
    reply = child.call(99, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": "A"}, "context": {"arguments": {"x": "y"}}})
    assert reply["result"]["completion"]["values"] == ["Ada", "Alan"]
    assert child.close() == 0
    assert not child.tracebacks(), b"".join(child.stderr).decode()


@pytest.mark.parametrize("stop", ["eof", "sigterm"])
@pytest.mark.parametrize("then", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_shutdown_exits_quietly(child, stop, then):
    # "eof" is the spec's shutdown, as the official client does it: close stdin, wait for
    # the drain, then SIGTERM. "sigterm": a second signal while the first one's shutdown
    # waits for a handler that ignores cancellation.
    child.initialize()
    child.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "hold", "arguments": {}}})
    child.wait_stderr(b"hold: started")
    assert child.proc.stdin is not None
    if stop == "eof":
        child.proc.stdin.close()
    else:
        child.proc.send_signal(signal.SIGTERM)
    # The handler is cancelled (the drain is over); the shutdown now waits for its thread.
    child.wait_stderr(b"hold: cancelled")
    child.proc.send_signal(then)
    assert child.proc.wait(WAIT) == 0
    for thread in child._threads:
        thread.join(WAIT)
    assert not child.tracebacks(), b"".join(child.stderr).decode()
    rest = []
    while (line := child.lines.get(timeout=WAIT)) is not None:
        rest.append(line)
    assert rest[-1:] == [b"stdout restored\n"]


def test_every_request_piped_in_before_eof_is_answered(child):
    # ``printf '...' | server``: the drain at EOF used to close stdout while the last
    # handlers were between finishing and writing, losing their answers.
    # Large answers keep handlers queued on the write lock, widening that window.
    child.initialize()
    count = 100
    text = "x" * 32768
    assert child.proc.stdin is not None
    child.proc.stdin.write(b"".join(
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}}}).encode()
        + b"\n" for n in range(1, count + 1)))
    child.proc.stdin.close()
    answered = set()
    while (line := child.lines.get(timeout=WAIT)) is not None:
        if line != b"stdout restored\n":
            answered.add(json.loads(line)["id"])
    assert answered == set(range(1, count + 1))
    assert child.close() == 0
