"""A start-up failure's details stay in the log: its exception's text (a path, a host, a
DSN with its password) never reaches a caller (issue 40's class: the proxy's errors showed
its callers the target's command line). Over HTTP, in both eras, callers get a generic
503; over stdio the server ends before it answers anything, its stdout (the wire) empty;
the log has the details, once."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import requests

from mcpsync import Server
from tests.helpers import WAIT
from tests.http.raw import post_modern
from tests.serving import RunningServer, with_root_on_path

SECRET = "postgres://admin:hunter2@db.internal:5432/prod"


def _failing(name: str = "db") -> Server:
    def lifespan(server):
        raise ConnectionRefusedError(f"cannot connect to {SECRET}")
        yield  # pragma: no cover - a generator lifespan that never gets here

    return Server(name, lifespan=lifespan)


def _legacy_post(url: str) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    return requests.post(url, data=json.dumps(body), timeout=WAIT, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})


def test_http_callers_get_a_generic_503_and_the_log_keeps_the_details(caplog):
    caplog.set_level(logging.DEBUG)
    app = _failing().wsgi_app(path="/mcp")
    with RunningServer(app) as running:
        url = f"{running.base}/mcp"
        answers = [post_modern(url, "tools/list", {}), _legacy_post(url),
                   post_modern(url, "tools/call", {"name": "x", "arguments": {}})]
    for response in answers:
        assert response.status_code == 503, response.text
        assert SECRET not in response.text and "hunter2" not in response.text
        assert "ConnectionRefusedError" not in response.text
        assert response.json()["error"]["message"] == (
            "Service unavailable: the server failed to start")
    # The operator's log has the exception, once (not once per request).
    told = [r for r in caplog.records
            if r.levelno >= logging.WARNING and SECRET in r.getMessage()]
    assert len(told) == 1, caplog.text


def test_a_stdio_server_that_fails_to_start_writes_nothing_on_the_wire(tmp_path: Path):
    (tmp_path / "db.py").write_text(textwrap.dedent(f"""\
        from mcpsync import Server

        def lifespan(server):
            raise ConnectionRefusedError("cannot connect to {SECRET}")
            yield

        Server("db", lifespan=lifespan).run_stdio()
    """))
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}) + "\n"
    done = subprocess.run([sys.executable, "db.py"], cwd=tmp_path, input=hello,
                          capture_output=True, text=True, timeout=WAIT,
                          env=with_root_on_path())
    assert done.returncode != 0
    assert done.stdout == ""  # the protocol stream: no answer, no details
    # stderr is the server's log: the details are there.
    assert f"ConnectionRefusedError: cannot connect to {SECRET}" in done.stderr, done.stderr


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_memory_client_of_a_server_that_failed_to_start_is_told_in_its_own_process(
        version):
    # In memory the caller is the process that starts the server: the failure is raised to
    # it as it is (StartupError, the exception as its cause), nothing goes through a wire.
    from mcpsync import Client, StartupError

    with pytest.raises(StartupError) as caught:
        Client.memory(_failing(), protocol_version=version, timeout=WAIT)
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
