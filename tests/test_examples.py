"""Every example runs: each client example spawns its server over stdio and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(script: str) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_demo():
    out = run("demo.py")
    assert "connected to weather 1.0.0 (protocol 2025-11-25)" in out
    assert "progress 3.0/3.0: day 3" in out
    assert "'temperatures': [4.0, 4.5, 5.0]" in out
    assert "bad args -> True" in out


def test_notes_client():
    out = run("notes_client.py")
    assert "added 'groceries'" in out and "note: eggs, milk" in out
    assert "missing note: error -32002" in out
    assert "summary: 2 notes, all fine" in out
    assert "complete 'gr': ['groceries']" in out


@pytest.mark.parametrize("server", ["weather_server.py", "notes_server.py"])
def test_servers_exit_on_eof(server):
    proc = subprocess.run([sys.executable, str(EXAMPLES / server)], input="", text=True,
                          capture_output=True, timeout=30, env=dict(os.environ,
                                                                    PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0 and proc.stdout == ""


def test_every_example_is_covered():
    covered = {"demo.py", "notes_client.py", "weather_server.py", "notes_server.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} <= covered
