"""mcpsync's Client driving a real stdio server subprocess."""

from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcpsync import Client, RequestTimeoutError
from tests.helpers import WAIT, run_threads, wait_until

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"
ENV = {"PYTHONPATH": str(ROOT)}


@pytest.fixture
def client():
    with Client.stdio([sys.executable, str(FIXTURE)], env=ENV, timeout=WAIT) as c:
        yield c


def wait_for_file(path: Path, timeout: float = WAIT) -> str:
    """The text the server process writes to ``path`` (another process: no event)."""
    wait_until(lambda: path.exists() and path.read_text(), timeout=timeout,
               message=f"{path} never appeared")
    return path.read_text()


def test_list_and_call(client):
    names = [tool.name for tool in client.list_tools()]
    assert {"echo", "add", "reading", "slow"} <= set(names)
    assert client.call_tool("add", {"a": 20, "b": 22}).structured_content == {"result": 42}


def test_timeout_cancels_the_tool_and_the_client_stays_usable(client, tmp_path):
    marker = tmp_path / "cancelled"
    with pytest.raises(RequestTimeoutError):
        client.call_tool("slow", {"seconds": 30, "marker": str(marker)}, timeout=0.2)
    raised_at = time.monotonic()
    seen_at = float(wait_for_file(marker))
    # CLOCK_MONOTONIC is system-wide, so the two processes' clocks compare. The tool saw
    # the cancellation shortly after the deadline (the 100 ms target is measured in
    # benchmarks/spine.py; this bound only proves it happened promptly).
    assert seen_at - raised_at < 2.0
    assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_sixteen_threads_share_one_client(client):
    def work(n: int) -> list[str]:
        return [client.call_tool("echo", {"text": f"{n}-{i}"}).text for i in range(10)]

    results = dict(enumerate(run_threads(work, 16, name="t-share", timeout=WAIT)))
    assert results == {n: [f"{n}-{i}" for i in range(10)] for n in range(16)}


def test_stderr_goes_to_logging_even_without_a_real_stderr(monkeypatch, caplog):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # like Jupyter: no fileno()
    with caplog.at_level(logging.INFO, logger="mcpsync.server_stderr"), \
            Client.stdio([sys.executable, str(FIXTURE)], env=ENV, timeout=WAIT) as c:
        c.call_tool("chatty")
    assert any("explicit stderr" in r.getMessage() for r in caplog.records)


def test_close_reaps_the_process():
    c = Client.stdio([sys.executable, str(FIXTURE)], env=ENV, timeout=WAIT)
    process = c._connection.transport.process
    c.close()
    assert process.poll() is not None
    c.close()  # idempotent


def test_ctrl_c_cancels_the_call_on_the_server(tmp_path):
    marker = tmp_path / "cancelled"
    started = tmp_path / "started"
    script = tmp_path / "caller.py"
    script.write_text(
        "import sys\n"
        "from mcpsync import Client\n"
        f"with Client.stdio([sys.executable, {str(FIXTURE)!r}], env={ENV!r}) as c:\n"
        "    print('ready', flush=True)\n"
        "    try:\n"
        f"        c.call_tool('slow', {{'seconds': 30, 'marker': {str(marker)!r}, "
        f"'started': {str(started)!r}}})\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', flush=True)\n"
        "        c.ping()\n"
        "        print('still usable', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            env=dict(os.environ, **ENV), text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        wait_for_file(started)  # the tool is running on the server
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "interrupted"
        assert proc.stdout.readline().strip() == "still usable"
        wait_for_file(marker)
        assert proc.wait(WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
