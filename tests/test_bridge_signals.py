"""``mcpsync run URL`` (the stdio-to-HTTP bridge) ends the HTTP session on SIGTERM as on
SIGINT and EOF: a host stopping it (most send SIGTERM) must not leave the session open on
the server until its idle timeout."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading

import pytest

from mcpsync import Server
from tests.helpers import WAIT
from tests.serving import ROOT, RunningServer


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_relayed_session(signum):
    server = Server("relayed")
    app = server.wsgi_app(path="/mcp")
    deleted = threading.Event()
    sessions: list[str] = []

    def recording(environ, start_response):
        if environ["REQUEST_METHOD"] == "DELETE":
            sessions.append(environ.get("HTTP_MCP_SESSION_ID", ""))
            deleted.set()
        return app(environ, start_response)

    with RunningServer(recording, on_stop=app.close) as running:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-m", "mcpsync", "run", running.base + "/mcp"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps({
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "host", "version": "1"}}}).encode() + b"\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], WAIT)
            assert ready, "no answer to initialize"
            answer = json.loads(proc.stdout.readline())
            assert answer["result"]["protocolVersion"] == "2025-11-25"
            proc.send_signal(signum)
            assert proc.wait(WAIT) == 0, proc.stderr.read() if proc.stderr else ""
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(WAIT)
        assert deleted.wait(WAIT), "the bridge did not end its HTTP session"
        assert sessions and sessions[0]
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        assert "Traceback" not in stderr, stderr
