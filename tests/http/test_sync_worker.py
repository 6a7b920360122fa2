"""Under gunicorn's default sync worker (one request at a time per process) a
handshake-era client used to hang on its first call: its standalone GET stream held the
only thread. The app now refuses that stream (405), says so once in the log, and every era
works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests

from mcpsync import Client
from tests.helpers import WAIT, require_module
from tests.http.raw import BOTH, LEGACY
from tests.serving import free_port, gunicorn_argv, wait_for_port, with_root_on_path

require_module("gunicorn")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="gunicorn is POSIX only")

ROOT = Path(__file__).resolve().parents[2]
CALL_TIMEOUT = 10.0  # the hang was a client timeout: well below it, or it is back


def test_every_era_works_under_the_sync_worker_and_it_is_said_once() -> None:
    port = free_port()
    argv = gunicorn_argv("tests.http.gunicorn_fixture:app", port, workers=1, threads=None)
    env = with_root_on_path()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc=proc)
        url = f"http://127.0.0.1:{port}/mcp"
        for version in ("2025-11-25", "2025-06-18", "2025-03-26", "2026-07-28"):
            with Client.http(url, protocol_version=version, timeout=CALL_TIMEOUT) as client:
                assert "add" in [tool.name for tool in client.list_tools()]
                assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        # the standalone stream is refused at once, not held
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}}
        session = requests.post(url, json=init, headers={"Accept": BOTH},
                                timeout=WAIT).headers["Mcp-Session-Id"]
        got = requests.get(url, headers={"Accept": "text/event-stream",
                                         "Mcp-Session-Id": session,
                                         "MCP-Protocol-Version": LEGACY}, timeout=WAIT)
        assert got.status_code == 405
        old = requests.get(f"http://127.0.0.1:{port}/sse",
                           headers={"Accept": "text/event-stream"}, timeout=WAIT)
        assert old.status_code == 503 and "gthread" in old.json()["error"]["message"]
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=WAIT)
    assert err.count("runs one request at a time per process") == 1, err
    assert "gunicorn -k gthread" in err
    assert "Traceback" not in err
