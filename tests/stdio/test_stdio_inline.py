"""Requests run on the reader thread of a real stdio server (mcpsync/engine/inline.py).

A quick tool runs inline, on the thread that read it; each test first calls a tool quickly
a few times (so it is known quick, and runs inline), then makes the same tool block, ask the
client something, or wait for its cancellation: the stream must keep flowing, in order.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import WAIT, wait_until

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).resolve().parent / "inline_server.py"
WARM = 5  # quick calls before the tool misbehaves


class Peer:
    """The inline test server as a child process; stdout parsed on a thread."""

    def __init__(self, capabilities: dict[str, Any] | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._write_lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="inline-test-stdout",
                                        daemon=True)
        self._thread.start()
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25",
                              "capabilities": capabilities or {},
                              "clientInfo": {"name": "inline-test", "version": "0"}}})
        assert "result" in self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.messages.put(json.loads(line))
        self.messages.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        message = self.messages.get(timeout=WAIT)
        assert message is not None, "the server closed stdout"
        return message

    def call(self, request_id: Any, name: str, arguments: dict[str, Any],
             meta: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": params})

    def result(self, request_id: Any, name: str, arguments: dict[str, Any]) -> Any:
        """Call and wait for the answer (nothing else may arrive meanwhile)."""
        self.call(request_id, name, arguments)
        message = self.recv()
        assert message.get("id") == request_id, message
        return value(message)

    def warm(self, name: str, arguments: dict[str, Any]) -> None:
        for i in range(WARM):
            self.result(f"warm-{name}-{i}", name, arguments)

    def threads(self) -> list[str]:
        return list(self.result("threads", "threads", {}))

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(WAIT)
            self._thread.join(WAIT)


def value(answer: dict[str, Any]) -> Any:
    """A tool's return value: its structured result, else its one text."""
    result = answer["result"]
    assert not result.get("isError"), answer
    if "structuredContent" in result:
        return result["structuredContent"]["result"]
    return result["content"][0]["text"]


@pytest.fixture
def peer():
    server = Peer()
    yield server
    server.close()


def test_a_quick_tool_that_blocks_does_not_stall_the_stream(peer: Peer) -> None:
    peer.warm("hold", {"wait": False})
    peer.call("held", "hold", {"wait": True})
    # While it blocks (on the thread that read it), 1000 echoes are read and answered.
    for i in range(1000):
        peer.call(i, "echo", {"text": str(i)})
    answers = {}
    for _ in range(1000):
        message = peer.recv()
        assert message["id"] != "held", "the held call ended before it was released"
        answers[message["id"]] = value(message)
    assert answers == {i: str(i) for i in range(1000)}
    peer.call("release", "release", {})
    got = {peer.recv()["id"] for _ in range(2)}
    assert got == {"release", "held"}


def test_the_displaced_reader_ends_and_a_new_one_reads(peer: Peer) -> None:
    peer.warm("hold", {"wait": False})
    peer.call("held", "hold", {"wait": True})
    names = peer.threads()
    assert "mcpsync-stdio-reader-2" in names
    assert "mcpsync-stdio-watch" in names
    peer.call("release", "release", {})
    assert {peer.recv()["id"] for _ in range(2)} == {"release", "held"}
    # The displaced thread answered and ended; one reader is left.
    wait_until(lambda: [n for n in peer.threads() if "-reader" in n]
               == ["mcpsync-stdio-reader-2"], timeout=WAIT,
               message=lambda: peer.threads())
    # hold is now known to be slow: it runs on the pool, and reading stays where it is.
    assert peer.result("after", "hold", {"wait": True}) == "held"
    assert [n for n in peer.threads() if "-reader" in n] == ["mcpsync-stdio-reader-2"]


def test_cancelling_a_request_that_runs_inline(peer: Peer) -> None:
    peer.warm("until_cancelled", {"wait": False})
    peer.call("long", "until_cancelled", {"wait": True})
    assert peer.result("e1", "echo", {"text": "still reading"}) == "still reading"
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": "long", "reason": "test"}})
    # The cancelled request is never answered: the next message is the echo's.
    assert peer.result("e2", "echo", {"text": "after"}) == "after"
    assert peer.result("e3", "echo", {"text": "again"}) == "again"
    assert peer.messages.empty()


def test_progress_comes_before_its_answer_inline_and_in_order(peer: Peer) -> None:
    for round_ in range(WARM + 3):
        token = f"tok-{round_}"
        peer.call(f"c{round_}", "chatty", {"count": 40}, meta={"progressToken": token})
        seen = []
        while True:
            message = peer.recv()
            if message.get("method") == "notifications/progress":
                assert message["params"]["progressToken"] == token
                seen.append(message["params"]["progress"])
                continue
            assert message["id"] == f"c{round_}"
            assert value(message) == "sent 40"
            break
        assert seen == list(range(1, 41))


def test_a_tool_running_inline_can_ask_the_client() -> None:
    peer = Peer(capabilities={"roots": {}})
    try:
        peer.warm("ask_roots", {"ask": False})
        peer.call("ask", "ask_roots", {"ask": True})
        request = peer.recv()
        assert request["method"] == "roots/list"
        # Reading goes on while the tool waits for our answer.
        assert peer.result("e", "echo", {"text": "meanwhile"}) == "meanwhile"
        peer.send({"jsonrpc": "2.0", "id": request["id"],
                   "result": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}})
        answer = peer.recv()
        assert answer["id"] == "ask"
        assert value(answer) == "file:///a,file:///b"
    finally:
        peer.close()


def test_answers_of_pipelined_quick_calls_all_arrive(peer: Peer) -> None:
    # Many requests in one read: each is run inline in turn and answered.
    lines = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                 "params": {"name": "echo", "arguments": {"text": str(i)}}}
                                ).encode() + b"\n" for i in range(300))
    assert peer.proc.stdin is not None
    with peer._write_lock:
        peer.proc.stdin.write(lines)
        peer.proc.stdin.flush()
    ids = [peer.recv()["id"] for _ in range(300)]
    assert sorted(ids) == list(range(300))
