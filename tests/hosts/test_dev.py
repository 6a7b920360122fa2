"""``mcpsync dev``: a real ``mcpsync dev`` process serves a file, restarts it on the
same port when the file is edited (a client sees the new code), says how to open the
Inspector, and ends its server when interrupted. Every wait is on the process's output,
with a deadline."""

from __future__ import annotations

import os
import queue
import re
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
from mcpsync.cli.dev import server_spec, watched
from mcpsync.cli.target import TargetError
from mcpsync.hosts import HOME_VARIABLE
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import require_module
from tests.serving import ROOT

require_module("watchfiles")

SERVER = '''
from mcpsync import Server

server = Server("calc")

@server.tool()
def version() -> str:
    return "{version}"
'''


class Output:
    """The lines a process writes on stdout, read on a thread into a queue."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        self._thread = threading.Thread(target=self._read, args=(process.stdout,),
                                        name="test-dev-stdout", daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r} in {timeout} s; "
                                     f"saw {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"the output ended before {pattern!r}; saw {self.seen}")
            self.seen.append(line)
            match = re.search(pattern, line)
            if match is not None:
                return match


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Output, Path]]:
    path = tmp_path / "calc.py"
    path.write_text(SERVER.format(version="v1"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "mcpsync", "dev", "calc.py",
                                "--port", "0"], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        yield process, Output(process), path
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def _version(url: str) -> str:
    with Client.http(url, timeout=30) as client:
        return client.call_tool("version").text


def test_an_edit_restarts_the_server_on_the_same_port(dev) -> None:
    process, output, path = dev
    url = output.expect(r"^mcpsync dev: serving calc at (http://\S+)$").group(1)
    output.expect(r"open the MCP Inspector: npx @modelcontextprotocol/inspector .* "
                  + re.escape(url))
    assert _version(url) == "v1"
    path.write_text(SERVER.format(version="v2"))
    output.expect(r"^mcpsync dev: calc\.py changed: restarting$")
    again = output.expect(r"^mcpsync dev: serving calc at (http://\S+)$").group(1)
    assert again == url
    assert _version(url) == "v2"
    process.send_signal(signal.SIGINT)
    assert process.wait(30) == 0
    port = int(url.split(":")[2].split("/")[0])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # its server ended with it


def test_sigterm_ends_the_server_too(dev) -> None:
    process, output, _ = dev
    url = output.expect(r"^mcpsync dev: serving calc at (http://\S+)$").group(1)
    process.terminate()
    assert process.wait(30) == 0
    port = int(url.split(":")[2].split("/")[0])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_what_dev_serves_and_watches(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "calc.py").write_text(SERVER.format(version="v1"))
    monkeypatch.chdir(tmp_path)
    assert server_spec("calc.py:server") == "calc.py:server"
    assert watched("calc.py", []) == [tmp_path.resolve()]
    with pytest.raises(TargetError, match="a URL or a command line is not one"):
        server_spec("python calc.py")
    with pytest.raises(TargetError, match="no such file"):
        watched("missing.py", [])
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").write_text(
        '{"mcpServers": {"calc": {"command": "python", "args": ["-m", "mcpsync", "run", '
        '"/srv/calc.py:server"]}, "npm": {"command": "npx", "args": ["server"]}}}')
    monkeypatch.setenv(HOME_VARIABLE, str(home))
    assert server_spec("cursor:calc") == "/srv/calc.py:server"
    with pytest.raises(TargetError, match="not `mcpsync run SERVER`"):
        server_spec("cursor:npm")
