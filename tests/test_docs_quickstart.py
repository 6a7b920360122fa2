"""The quickstart's ``mcpsync`` command block runs against the quickstart's own
``server.py`` (issue 41: it read a resource and got a prompt the server did not have).
Each line that names ``server.py`` is run as written (``python`` being this interpreter)
and must succeed; the lines that need something else (an HTTP server, a remote URL, a
long-running ``run``) are left out."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
SERVER = re.search(r"Save this as `server.py`:\s*```python\n(.*?)```", PAGE, re.S)
COMMANDS = re.search(r"## The `mcpsync` command\s*```bash\n(.*?)```", PAGE, re.S)


def _lines() -> list[str]:
    assert COMMANDS is not None
    found = []
    for line in COMMANDS.group(1).splitlines():
        command = line.split("#", 1)[0].strip() if " #" in line else line.strip()
        if "server.py" in command and not command.startswith("mcpsync run"):
            found.append(command)
    return found


LINES = _lines()


def test_the_block_has_the_lines_it_should():
    assert SERVER is not None
    verbs = {shlex.split(line)[1] for line in LINES}
    assert verbs >= {"tools", "call", "inspect", "resources", "read", "prompts", "prompt"}


@pytest.mark.parametrize("line", LINES)
def test_each_line_runs_against_the_quickstart_server(tmp_path, line):
    assert SERVER is not None
    (tmp_path / "server.py").write_text(SERVER.group(1))
    words = [w.replace("python server.py", f"{shlex.quote(sys.executable)} server.py")
             for w in shlex.split(line)]
    done = subprocess.run([sys.executable, "-m", "mcpsync", *words[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, f"{line}\n{done.stderr}"
    assert done.stdout.strip()
