"""The rest of the interop matrix: progress, resources, prompts and cancellation across
{stdio, HTTP} × {2025-11-25, 2026-07-28}, in both directions.

* mcpsync's Client × an official-SDK MCPServer (the other legs — tools, structured output,
  elicitation, sampling, roots — are in test_official_server_stdio.py and
  test_http_mcpsync_client.py);
* the official SDK's client × a mcpsync server: a call that times out on the client is
  cancelled on the server (the tool sees ``ctx.cancelled``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsync import Client, RequestTimeoutError
from tests.helpers import WAIT, wait_until
from tests.interop.peers import run_official_client
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer, free_port, wait_for_port

pytestmark = pytest.mark.interop
ROOT = Path(__file__).resolve().parents[2]
OFFICIAL_SERVER = Path(__file__).with_name("servers") / "official_server.py"
ERAS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module")
def official_http(official_python: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([official_python, str(OFFICIAL_SERVER), "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(params=["stdio", "http"])
def connect(request, official_python):
    made: list[Client] = []

    def make(version: str) -> Client:
        if request.param == "stdio":
            client = Client.stdio([official_python, str(OFFICIAL_SERVER)],
                                  protocol_version=version, timeout=WAIT)
        else:
            client = Client.http(request.getfixturevalue("official_http"),
                                 protocol_version=version, timeout=WAIT)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


# -- mcpsync Client × official MCPServer ------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_progress_resources_and_prompts_from_the_official_server(connect, version):
    client = connect(version)
    assert client.protocol_version == version
    seen = []
    result = client.call_tool("count", {"n": 3}, on_progress=seen.append)
    assert result.text == "counted 3"
    assert [p.progress for p in seen] == [1, 2, 3] and seen[-1].total == 3
    assert "greeting://hello" in {r.uri for r in client.list_resources()}
    assert client.read_resource("greeting://hello").contents[0].text == (
        "Hello from the official SDK")
    templates = {t.uri_template for t in client.list_resource_templates()}
    assert "greeting://people/{name}" in templates
    assert client.read_resource("greeting://people/Ada").contents[0].text == "Hello, Ada"
    prompt = client.get_prompt("review", {"topic": "threads"})
    assert "threads" in str(prompt.messages[0].content)


@pytest.mark.parametrize("version", ERAS)
def test_a_timed_out_call_on_the_official_server_leaves_the_client_usable(connect, version):
    client = connect(version)
    with pytest.raises(RequestTimeoutError):
        client.call_tool("nap", {"seconds": 30}, timeout=0.5)
    assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}


# -- official client × mcpsync server ---------------------------------------------------------


@pytest.fixture(scope="module")
def mcpsync_http() -> Iterator[str]:
    app = fixture_server.wsgi_app(path="/mcp", keepalive_interval=0.2)
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_the_official_clients_timeout_cancels_the_mcpsync_tool(official_python, mcpsync_http,
                                                               tmp_path, transport, mode):
    marker = tmp_path / "cancelled"
    started = tmp_path / "started"
    # 3 s: long enough for the tool to have started on a loaded machine (with 1 s the
    # client sometimes gave up before the stdio server had run it), short beside 60 s.
    args = ["--mode", mode, "--timeout", "3", "call", "slow",
            json.dumps({"seconds": 60, "marker": str(marker), "started": str(started)})]
    if transport == "http":
        report = run_official_client(args, url=mcpsync_http, check=False, timeout=WAIT)
    else:
        server = [sys.executable, str(ROOT / "tests" / "server" / "fixture_server.py")]
        report = run_official_client(args, server, check=False, timeout=WAIT,
                                     env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert not report.get("ok"), report  # the client gave up after 3 s
    assert started.exists()
    # The tool saw the cancellation (notifications/cancelled, or the stream closing) and
    # stopped well before its 60 s.
    # Another process writes the marker: no event to wait on.
    wait_until(lambda: marker.exists() and marker.read_text(), timeout=10.0,
               interval=0.05, message=lambda: report)
