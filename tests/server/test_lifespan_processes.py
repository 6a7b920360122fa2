"""Lifespan in real processes: a stdio server runs its shutdown at EOF and at SIGTERM and
reports a failed startup; under gunicorn with 2 workers each worker starts once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, MCPSyncError
from tests.helpers import WAIT, require_module, wait_until
from tests.http.raw import post_modern
from tests.serving import running_gunicorn

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "server" / "lifespan_server.py"


def events(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def env_for(log: Path, **extra: str) -> dict[str, str]:
    return dict(os.environ, MCPSYNC_TEST_LIFESPAN_LOG=str(log),
                PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def test_stdio_runs_shutdown_at_eof(tmp_path: Path) -> None:
    log = tmp_path / "events"
    with Client.stdio([sys.executable, str(SCRIPT)], env=env_for(log), timeout=WAIT) as client:
        answer = client.call_tool("state").structured_content
        assert answer["db"] == "connected" and answer["startups"] == 1
        pid = answer["pid"]
    # close() ends stdin: the server drains, runs its shutdown, exits
    wait_until(lambda: "shutdown" in events(log), timeout=WAIT)
    assert events(log) == ["startup", str(pid), "hook-up", str(pid),
                           "hook-down", str(pid), "shutdown", str(pid)]


def test_stdio_runs_shutdown_at_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "events"
    proc = subprocess.Popen([sys.executable, str(SCRIPT)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(log))
    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}}
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0  # started and serving
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    assert events(log)[::2] == ["startup", "hook-up", "hook-down", "shutdown"]
    assert b"Traceback" not in err


def test_stdio_startup_failure_exits_with_the_error(tmp_path: Path) -> None:
    log = tmp_path / "events"
    stderr = tmp_path / "stderr"
    with open(stderr, "w", encoding="utf-8") as err, pytest.raises(MCPSyncError):
        Client.stdio([sys.executable, str(SCRIPT)], stderr=err,
                     env=env_for(log, MCPSYNC_TEST_LIFESPAN_FAIL="1"), timeout=WAIT).close()
    text = stderr.read_text(encoding="utf-8")
    assert "failed to start" in text and "the database is not reachable" in text
    assert events(log)[::2] == ["startup"]  # no hook, no shutdown of what never started


require_module("gunicorn")


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[Any]:
    """``gunicorn(*options)``: the lifespan server under 2 gthread workers, its URL."""
    def start(*options: str) -> Any:
        return running_gunicorn("tests.server.lifespan_server:app", threads=4,
                                options=options, env=env_for(tmp_path / "events"))
    yield start


def startups(log: Path) -> list[str]:
    words = events(log)
    return [pid for event, pid in zip(words[::2], words[1::2], strict=True) if event == "startup"]


def ask_state(url: str) -> dict[str, Any]:
    response = post_modern(url, "tools/call", {"name": "state", "arguments": {}})
    assert response.status_code == 200, response.text
    return dict(response.json()["result"]["structuredContent"])


@pytest.mark.skipif(sys.platform == "win32", reason="gunicorn is POSIX only")
def test_each_gunicorn_worker_starts_once_and_shuts_down(gunicorn: Any, tmp_path: Path) -> None:
    log = tmp_path / "events"
    with gunicorn("-c", "python:tests.server.lifespan_gunicorn_conf") as base:
        # app.start() in post_worker_init: both workers start before serving anything
        wait_until(lambda: len(startups(log)) == 2, timeout=WAIT)
        for _ in range(10):
            answer = ask_state(base + "/mcp")
            assert answer["startups"] == 1 and answer["pid"] in map(int, startups(log))
    workers = set(startups(log))
    assert len(workers) == 2 and len(startups(log)) == 2
    words = events(log)
    shut = {pid for event, pid in zip(words[::2], words[1::2], strict=True) if event == "shutdown"}
    assert shut == workers  # each worker's graceful exit ran its shutdown


@pytest.mark.skipif(sys.platform == "win32", reason="gunicorn is POSIX only")
def test_preload_starts_in_each_worker_not_in_the_master(gunicorn: Any,
                                                         tmp_path: Path) -> None:
    log = tmp_path / "events"
    with gunicorn("--preload") as base:
        assert startups(log) == []  # imported by the master, which starts nothing
        answers = [ask_state(base + "/mcp") for _ in range(12)]
        seen = {a["pid"] for a in answers}
        assert all(a["startups"] == 1 for a in answers)
        assert set(map(int, startups(log))) == seen and len(startups(log)) == len(seen)
