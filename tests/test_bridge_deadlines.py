"""``mcpsync run URL`` (the stdio-to-HTTP bridge) bounds every relayed request's HTTP
exchange: the host's ``notifications/cancelled`` ends it at once, and an answer that does
not begin (connect, head, a JSON body) within ``--timeout`` (default 80 s) ends it and
answers the host with an error. An SSE answer that has begun lives on (a long tool call
streams for as long as it runs). Before, a server trickling each answer's head pinned one
bridge thread per request for ever, even after the host cancelled.

The host here is a test writing JSON-RPC lines to a real bridge subprocess; the server is
:mod:`tests.transports.hostile`'s raw HTTP server, which sees when the bridge hangs up."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from mcpsync.protocol.versions import META_VERSION
from tests.helpers import WAIT
from tests.serving import ROOT
from tests.transports.hostile import LEGACY, MODERN, RawHttpServer, RawRequest, Script


class Trickle:
    """A script that sends an answer's head one header line every 0.1 s, for ever, and
    notes when the client hangs up (an EOF or a reset on its socket)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.hung_up = threading.Event()
        self.hung_up_at = 0.0

    def __call__(self, request: RawRequest) -> None:
        sock = request.sock
        try:
            sock.sendall(b"HTTP/1.1 200 OK\r\n")
            self.started.set()
            while not request.server.stopping.is_set():
                sock.sendall(b"X-Slow: 1\r\n")
                readable, _, _ = select.select([sock], [], [], 0.1)
                if readable and not sock.recv(1):
                    break  # EOF: the request was read whole, so this is the hang-up
            else:
                return
        except OSError:
            pass  # a reset: hung up too
        self.hung_up_at = time.monotonic()
        self.hung_up.set()


def late_sse_answer(delay: float) -> Script:
    """An SSE answer whose head comes at once and whose one event, the answer, only after
    ``delay`` seconds: a long tool call."""

    def script(request: RawRequest) -> None:
        request.send_head(200, "text/event-stream")
        if request.server.stopping.wait(delay):
            return
        answer = {"jsonrpc": "2.0", "id": request.rpc_id,
                  "result": {"content": [{"type": "text", "text": "late"}]}}
        request.sock.sendall(f"data: {json.dumps(answer)}\n\n".encode())

    return script


def server_script(tool_call: Script) -> Script:
    """Either era: a handshake-era session (initialize, a session id, no GET stream) or
    2026-07-28 requests; ``tools/call`` is ``tool_call``'s, anything else answered ``{}``."""

    def script(request: RawRequest) -> None:
        if request.method == "DELETE":
            request.send_body(b"", status=200)
        elif request.method == "GET":
            request.send_body(b"", status=405)
        elif request.rpc_method == "initialize":
            request.answer({"protocolVersion": LEGACY, "capabilities": {"tools": {}},
                            "serverInfo": {"name": "hostile", "version": "1"}},
                           Mcp_Session_Id="relayed-session")
        elif request.rpc_id is None:
            request.accepted()
        elif request.rpc_method == "tools/call":
            tool_call(request)
        else:
            request.answer({})

    return script


class Host:
    """A stdio host driving a bridge subprocess line by line."""

    def __init__(self, url: str, *options: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpsync", "run", url, *options],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.version = LEGACY

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        if self.version == MODERN:
            params = {**params, "_meta": {META_VERSION: MODERN}}
        self.send({"id": request_id, "method": method, "params": params})

    def next_message(self, timeout: float = WAIT) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f"the bridge wrote nothing in {timeout} s"
        line = self.proc.stdout.readline()
        assert line, "the bridge ended its stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def connect(self, version: str) -> None:
        self.version = version
        if version == LEGACY:
            self.send({"id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "host", "version": "1"}}})
            assert self.next_message()["result"]["protocolVersion"] == LEGACY
            self.send({"method": "notifications/initialized"})

    def still_serves(self, request_id: int) -> None:
        """Another request is relayed and answered: the first one answered for."""
        self.request(request_id, "ping", {})
        answer = self.next_message()
        assert answer.get("id") == request_id and "result" in answer, answer

    def finish(self) -> None:
        """EOF on stdin: the bridge ends its session and exits 0, with no traceback."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            status = self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(WAIT)
        stderr = self.proc.stderr.read().decode() if self.proc.stderr else ""
        assert status == 0, stderr
        assert "Traceback" not in stderr, stderr

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_cancel_ends_the_relayed_exchange_at_once(version):
    trickle = Trickle()
    with RawHttpServer(server_script(trickle)) as server:
        host = Host(server.url)
        try:
            host.connect(version)
            host.request(2, "tools/call", {"name": "slow", "arguments": {}})
            assert trickle.started.wait(WAIT), "the call never reached the server"
            cancelled_at = time.monotonic()
            host.send({"method": "notifications/cancelled",
                       "params": {"requestId": 2, "reason": "the user gave up"}})
            assert trickle.hung_up.wait(2.0), "the bridge kept the cancelled exchange open"
            assert trickle.hung_up_at - cancelled_at < 2.0
            # No answer to the cancelled request (the spec: the receiver of a cancellation
            # sends none); the next request is relayed and its answer is the next line.
            host.still_serves(3)
            host.finish()
        finally:
            host.kill()


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_an_answer_that_does_not_begin_in_time_is_an_error_for_the_host(version):
    trickle = Trickle()
    with RawHttpServer(server_script(trickle)) as server:
        host = Host(server.url, "--timeout", "1")
        try:
            host.connect(version)
            sent = time.monotonic()
            host.request(2, "tools/call", {"name": "slow", "arguments": {}})
            answer = host.next_message()
            took = time.monotonic() - sent
            assert answer["id"] == 2, answer
            assert answer["error"]["code"] == -32603
            assert "did not answer in time" in answer["error"]["message"]
            assert "1 s" in answer["error"]["message"]
            assert 0.9 <= took < 5.0, took
            assert trickle.hung_up.wait(2.0), "the bridge kept the overdue exchange open"
            host.still_serves(3)
            host.finish()
        finally:
            host.kill()


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_streamed_answer_that_has_begun_outlives_the_timeout(version):
    with RawHttpServer(server_script(late_sse_answer(2.0))) as server:
        host = Host(server.url, "--timeout", "1")
        try:
            host.connect(version)
            host.request(2, "tools/call", {"name": "long", "arguments": {}})
            answer = host.next_message()
            assert answer["id"] == 2, answer
            assert answer["result"]["content"][0]["text"] == "late"
            host.finish()
        finally:
            host.kill()
