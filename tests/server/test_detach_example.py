"""The ``ctx.detach()`` example of docs/server.md, run as written: when the session ends
while its background thread runs, the thread ends quietly (no ``Exception in thread``
traceback), in memory and on a real stdio server."""

from __future__ import annotations

import re
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, LogMessage, Server
from tests.helpers import WAIT, wait_until

ROOT = Path(__file__).resolve().parents[2]


def example_source() -> str:
    text = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    found = [block for block in blocks if "def start_job" in block]
    assert len(found) == 1, "the detach example is gone from docs/server.md"
    # a faster beat than the docs' 5 s, so the loop turns several times in the test
    return found[0].replace("detached.sleep(5)", "detached.sleep(0.05)")


def example_server() -> Server:
    server = Server("jobs")
    # the names the guide's earlier examples define
    exec(compile(example_source(), "docs/server.md", "exec"),
         {"server": server, "HandlerContext": HandlerContext})
    return server


def test_a_session_ending_under_the_job_raises_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    failures: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    server = example_server()
    logs: list[LogMessage] = []
    with Client.memory(server, timeout=WAIT, on_log=logs.append) as client:
        before = set(threading.enumerate())
        assert client.call_tool("start_job", {"name": "a"}).text == "started a"
        wait_until(lambda: len(logs) >= 2, timeout=WAIT)  # the loop runs
        (job,) = [t for t in set(threading.enumerate()) - before
                  if t.name.startswith("job-") or "(work)" in t.name]
    job.join(WAIT)  # the session ended: the job must end too, and quietly
    assert not job.is_alive()
    assert failures == []


def test_on_a_stdio_server_nothing_lands_on_stderr(tmp_path: Path) -> None:
    script = tmp_path / "jobs.py"
    script.write_text(textwrap.dedent('''
        from mcpsync import HandlerContext, Server
        server = Server("jobs")
    ''') + example_source() + textwrap.dedent('''
        if __name__ == "__main__":
            server.run_stdio(drain_timeout=1.0)
    '''), encoding="utf-8")
    stderr = tmp_path / "stderr"
    logs: list[LogMessage] = []
    with open(stderr, "w", encoding="utf-8") as err, Client.stdio(
            [sys.executable, str(script)], stderr=err, timeout=WAIT,
            on_log=logs.append) as client:
        client.call_tool("start_job", {"name": "b"})
        wait_until(lambda: len(logs) >= 2, timeout=WAIT)
    assert "Traceback" not in stderr.read_text(encoding="utf-8")
