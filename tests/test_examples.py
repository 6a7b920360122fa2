"""Every example runs: each client example spawns its server over stdio and exits 0; each
web example (Flask, Django) serves its own pages and MCP at /mcp on a real port."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import requests

from mcpsync import Client
from tests.serving import free_port, serving_process

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


def serving(argv: Sequence[str], port: int, cwd: Path = ROOT,
            env: dict[str, str] | None = None) -> AbstractContextManager[str]:
    """A web example as a subprocess, with the repository importable."""
    return serving_process(argv, port, cwd=cwd,
                           env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


def check_mcp(url: str, tool: str, arguments: dict, expected: dict) -> None:
    """mcpsync's Client gets ``expected`` structured content at ``url``, in both eras."""
    for version in ("2025-11-25", "2026-07-28"):
        with Client.http(url, protocol_version=version, timeout=20) as client:
            assert client.protocol_version == version
            assert client.call_tool(tool, arguments).structured_content == expected


def test_flask_app():
    port = free_port()
    with serving([sys.executable, str(EXAMPLES / "flask_app.py"), "--port", str(port)],
                 port) as base:
        assert "Flask notes" in requests.get(base + "/", timeout=20).text
        requests.post(base + "/notes", json={"title": "t", "body": "b"}, timeout=20)
        check_mcp(base + "/mcp", "list_notes", {}, {"titles": ["t", "welcome"], "count": 2})


DJANGO_PROJECT = EXAMPLES / "django_project"


def test_django_project_runserver():
    port = free_port()
    argv = [sys.executable, str(DJANGO_PROJECT / "manage.py"), "runserver",
            f"127.0.0.1:{port}", "--noreload"]
    with serving(argv, port) as base:
        assert requests.get(base + "/books/", timeout=20).json()["Dune"] == 1965
        check_mcp(base + "/mcp", "find_book", {"title": "Dune"}, {"title": "Dune", "year": 1965})


def test_django_project_under_gunicorn():
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--threads", "8",
            "--bind", f"127.0.0.1:{port}", "--chdir", str(DJANGO_PROJECT), "notes_site.wsgi"]
    with serving(argv, port) as base:
        assert "Django books" in requests.get(base + "/", timeout=20).text
        check_mcp(base + "/mcp", "find_book", {"title": "Neuromancer"},
                  {"title": "Neuromancer", "year": 1984})


def test_gunicorn_app_with_several_workers(tmp_path):
    # The multi-worker recipe itself; tests/http/test_session_store.py checks that both
    # workers serve one session.
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--workers", "2",
            "--threads", "8", "--bind", f"127.0.0.1:{port}", "examples.gunicorn_app:app"]
    env = {"MCPSYNC_REQUEST_STATE_KEY": "examples-test-key",
           "MCPSYNC_SESSION_DIR": str(tmp_path / "sessions")}
    with serving(argv, port, env=env) as base:
        check_mcp(base + "/mcp", "add", {"a": 2, "b": 3}, {"result": 5})


def test_every_example_is_covered():
    covered = {"demo.py", "notes_client.py", "weather_server.py", "notes_server.py",
               "flask_app.py", "gunicorn_app.py",
               "oauth_site.py"}  # tests/auth_server/test_example_site.py
    assert {p.name for p in EXAMPLES.glob("*.py")} <= covered
    # examples/deploy/nginx.conf.template is what every test in tests/deploy/ runs.
    assert {p.name for p in EXAMPLES.iterdir() if p.is_dir()} <= {"django_project", "deploy",
                                                                 "__pycache__"}
