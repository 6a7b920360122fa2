"""A start-up failure is told once (issue 41): it is raised to whoever started the server,
and only a caller that swallows it (the WSGI app, answering 500) logs it, once. It used to
be logged with its traceback by every server it went through (a mounted proxy, then its
parent) and raised as well: about 100 lines for one refused connection."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpsync import Server
from tests.http.raw import post_modern
from tests.serving import RunningServer, free_port
from tests.test_cli import mcpsync

ROOT = Path(__file__).resolve().parents[2]
ROOT_CAUSE = "ConnectionClosedError: cannot connect to"

FRONT = textwrap.dedent("""\
    from mcpsync import Server

    server = Server("front")
    server.mount(Server.proxy("http://127.0.0.1:{port}/mcp"), prefix="remote")
""")

BUGGY = textwrap.dedent("""\
    import contextlib

    from mcpsync import Server


    @contextlib.contextmanager
    def lifespan(server):
        settings = {}
        yield {"db": settings["DATABASE_URL"]}


    server = Server("buggy", lifespan=lifespan)
""")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "front.py").write_text(FRONT.format(port=free_port()))  # nothing listens
    (tmp_path / "buggy.py").write_text(BUGGY)
    return tmp_path


def test_a_script_that_starts_a_failing_server_shows_the_failure_once(folder):
    (folder / "start.py").write_text("from front import server\n"
                                     "server.wsgi_app(path='/mcp').start()\n")
    done = subprocess.run([sys.executable, "start.py"], cwd=folder, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 1
    assert done.stderr.count(ROOT_CAUSE) == 1, done.stderr
    assert done.stderr.count("StartupError: server 'front' failed to start") == 1
    assert "server 'mcpsync-proxy' failed to start" in done.stderr  # the chain says where


def test_the_wsgi_app_logs_a_failed_start_once_and_answers_503(folder, caplog,
                                                               monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.syspath_prepend(str(folder))
    server = Server("front")
    server.mount(Server.proxy(f"http://127.0.0.1:{free_port()}/mcp"), prefix="remote")
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app) as running:
        for _ in range(3):
            response = post_modern(f"{running.base}/mcp", "tools/list", {})
            assert response.status_code == 503
            assert "failed to start" in response.json()["error"]["message"]
    assert caplog.text.count("Traceback") >= 1
    assert caplog.text.count(ROOT_CAUSE) == 1, caplog.text
    records = [r for r in caplog.records
               if r.levelno >= logging.WARNING and "failed to start" in r.getMessage()]
    assert len(records) == 1, [r.getMessage() for r in records]


def test_the_command_says_a_failed_start_in_one_line(folder):
    done = mcpsync("tools", "front.py", cwd=folder)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert ("mcpsync: server 'front' failed to start: StartupError: server 'mcpsync-proxy' "
            "failed to start: MCPError: the proxied server can not be reached") in done.stderr


def test_the_command_shows_where_a_bug_in_the_user_s_startup_is(folder):
    done = mcpsync("tools", "buggy.py", cwd=folder)
    assert done.returncode == 1
    assert done.stderr.count("Traceback") == 1, done.stderr  # the user's frame, once
    assert 'buggy.py", line 9, in lifespan' in done.stderr
    assert done.stderr.rstrip().endswith(
        "mcpsync: server 'buggy' failed to start: KeyError: 'DATABASE_URL'")
