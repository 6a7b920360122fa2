"""The ``request_state_key`` warning (issue 41): a key made up per process is right for one
process (``mcpsync serve``, ``flask run``, a test), so nothing warns there; it is wrong
where several processes serve the same clients (a shared session store or bus, a
multi-process WSGI server), and there the warning points at the user's line that built
the app, not at mcpsync's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcpsync import Client, Server
from mcpsync.http.session_store import FileSessionStore
from tests.helpers import require_module
from tests.serving import RunningServer, free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSYNC_REQUEST_STATE_KEY", raising=False)


def asking_server(**options: object) -> Server:
    server = Server("asks", **options)  # type: ignore[arg-type]

    @server.tool()
    def ping() -> str:
        return "pong"

    return server


@contextmanager
def recorded() -> Iterator[list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def key_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if "request_state_key" in str(w.message)]


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_one_process_in_memory_does_not_warn(version):
    with recorded() as caught, Client.memory(asking_server(), protocol_version=version) as c:
        assert c.call_tool("ping", {}).text == "pong"
    assert key_warnings(caught) == []


def test_one_process_over_http_does_not_warn():
    server = asking_server()
    with recorded() as caught:
        app = server.wsgi_app(path="/mcp")
        with RunningServer(app, on_stop=app.close) as running, \
                Client.http(f"{running.base}/mcp", protocol_version="2026-07-28") as c:
            assert c.call_tool("ping", {}).text == "pong"
    assert key_warnings(caught) == []


def test_a_shared_session_store_without_a_key_warns_at_the_user_s_line(tmp_path):
    server = asking_server()
    with recorded() as caught:
        line = sys._getframe().f_lineno + 1
        app = server.wsgi_app(path="/mcp", session_store=FileSessionStore(tmp_path))
    found = key_warnings(caught)
    assert len(found) == 1, [str(w.message) for w in caught]
    assert (found[0].filename, found[0].lineno) == (__file__, line)
    assert "shares its sessions with other processes" in str(found[0].message)
    app.close()


@pytest.mark.parametrize("where", ["argument", "environment"])
def test_a_configured_key_does_not_warn(tmp_path, monkeypatch, where):
    if where == "environment":
        monkeypatch.setenv("MCPSYNC_REQUEST_STATE_KEY", "shared")
        server = asking_server()
    else:
        server = asking_server(request_state_key="shared")
    with recorded() as caught:
        app = server.wsgi_app(path="/mcp", session_store=FileSessionStore(tmp_path))
    assert key_warnings(caught) == []
    app.close()


APP = textwrap.dedent("""\
    from mcpsync import Server

    server = Server("workers")


    @server.tool()
    def ping() -> str:
        return "pong"


    app = server.wsgi_app(path="/mcp")
""")


def test_gunicorn_with_two_workers_warns_once_per_worker_at_the_app_s_line(tmp_path):
    """wsgi.multiprocess is how a WSGI server says several processes serve the app."""
    require_module("gunicorn")
    (tmp_path / "several.py").write_text(APP)
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {k: v for k, v in os.environ.items() if k != "MCPSYNC_REQUEST_STATE_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind",
             f"127.0.0.1:{port}", "several:app"], cwd=tmp_path, env=env,
            stdout=subprocess.DEVNULL, stderr=out)
    try:
        wait_for_port(port, proc=proc)
        for _ in range(4):
            with Client.http(f"http://127.0.0.1:{port}/mcp",
                             protocol_version="2026-07-28", timeout=30) as c:
                assert c.call_tool("ping", {}).text == "pong"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    text = log.read_text()
    line = APP.splitlines().index('app = server.wsgi_app(path="/mcp")') + 1
    assert f"{tmp_path / 'several.py'}:{line}: UserWarning: no request_state_key" in text, text
    assert 1 <= text.count("no request_state_key") <= 2, text  # at most once per worker
