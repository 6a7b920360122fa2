"""The re-attach example of docs/tasks-client.md runs as the page says: cell 1 and cell 2
in two separate Python processes (a kernel restart loses everything but the task id),
against a real HTTP server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from mcpsync import HandlerContext, Server
from tests.helpers import LONG_WAIT as WAIT
from tests.serving import RunningServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "tasks-client.md"
ROOT = Path(__file__).resolve().parents[2]


def _cells() -> tuple[str, str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Re-attach by id", 1)[1].split("\n## ", 1)[0]
    first, second = re.findall(r"```python\n(.*?)```", section, re.S)[:2]
    return first, second


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=WAIT, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_start_restart_reattach_across_processes() -> None:
    server = Server("trainer")
    gate = threading.Event()

    @server.tool(task="required")
    def train_model(ctx: HandlerContext, epochs: int) -> str:
        """Train for a while."""
        while not gate.wait(0.05):
            ctx.check_cancelled()
        return f"trained for {epochs} epochs"

    app = server.wsgi_app()
    with RunningServer(app) as running:
        url = f"{running.base}/mcp"
        first, second = _cells()
        assert "http://127.0.0.1:8000/mcp" in first and "http://127.0.0.1:8000/mcp" in second
        # Cell 1 ends with the bare expression ``task_id``: a notebook shows it; print it.
        cell1 = first.replace("http://127.0.0.1:8000/mcp", url).rstrip()
        cell1 = cell1[: cell1.rstrip().rfind("\n")] + "\nprint(task_id)\n"
        task_id = _run(cell1).strip().splitlines()[-1]
        assert len(task_id) >= 22, task_id  # >= 128 bits, url-safe
        gate.set()
        cell2 = re.sub(r'client\.task\("[^"]*"\)', f"client.task({task_id!r})",
                       second.replace("http://127.0.0.1:8000/mcp", url))
        out = _run(cell2).splitlines()
        assert out[-1] == "trained for 50 epochs", out
        assert out[0] in ("working", "completed"), out
    app.close()
    server.close_tasks()
