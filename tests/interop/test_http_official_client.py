"""The official SDK client (mcp 2.3.0) driving mcpsync servers over Streamable HTTP, in both
eras: the handshake era (2025-11-25, with a session) and 2026-07-28 (stateless, where
elicitation, sampling and roots travel as InputRequiredResult rounds).

The servers are the ones the stdio interop tests use, served with ``server.wsgi_app()`` on
werkzeug's threaded server (a real socket on 127.0.0.1); one test serves through
``python -m mcpsync serve`` instead.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop.peers import run_official_client
from tests.interop.servers.asking_server import server as asking_server
from tests.interop.servers.rendezvous_server import server as rendezvous_server
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer, free_port, serving_process
from tests.spec import validate, validate_message

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
MODES = ["legacy", "modern"]
VERSION = {"legacy": "2025-11-25", "modern": "2026-07-28"}


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    app = fixture_server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


@pytest.fixture(scope="module")
def asking_url() -> Iterator[str]:
    app = asking_server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


def check_wire(report: dict[str, Any], mode: str) -> None:
    """Everything the mcpsync server sent validates against the era's schema."""
    sent = [e["msg"] for e in report["wire"] if e["dir"] == "send"]
    received = [e["msg"] for e in report["wire"] if e["dir"] != "send"]
    assert received, "the server sent nothing"
    if mode == "legacy":
        methods = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
        for message in received:
            validate_message("2025-11-25", message, methods.get(message.get("id")))
        return
    for message in received:
        if "result" in message:
            result = message["result"]
            kind = ("InputRequiredResult" if result.get("resultType") == "input_required"
                    else "Result")
            validate("2026-07-28", kind, result)


def drive(url: str, mode: str, *args: str, check: bool = True) -> dict[str, Any]:
    report = run_official_client(["--mode", mode, *args], url=url, env=ENV, check=check)
    if check:
        assert report["transport"] == "streamable-http"
        assert report["protocolVersion"] == VERSION[mode]
        check_wire(report, mode)
    return report


@pytest.mark.parametrize("mode", MODES)
def test_tools_are_listed_with_their_schemas(official_python, fixture_url, mode):
    report = drive(fixture_url, mode, "list-tools")
    if mode == "legacy":  # a pinned 2026-07-28 client skips discovery: no serverInfo
        assert report["serverInfo"]["name"] == "fixture"
    tools = {t["name"]: t for t in report["tools"]}
    assert {"echo", "add", "reading", "mixed", "slow", "progress"} <= set(tools)
    assert tools["echo"]["title"] == "Echo"
    assert tools["echo"]["annotations"]["readOnlyHint"] is True
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["outputSchema"]["properties"]["result"] == {"type": "integer"}
    for tool in tools.values():
        validate(VERSION[mode], "Tool", tool)


@pytest.mark.parametrize("mode", MODES)
def test_structured_output_and_tool_errors(official_python, fixture_url, mode):
    add = drive(fixture_url, mode, "--list-first", "call", "add", json.dumps({"a": 20, "b": 22}))
    assert add["rawResult"]["content"] == [{"type": "text", "text": "42"}]
    assert add["rawResult"]["structuredContent"] == {"result": 42}
    assert add["result"]["structuredContent"] == {"result": 42}
    reading = drive(fixture_url, mode, "--list-first", "call", "reading",
                    json.dumps({"city": "Oslo"}))
    assert reading["rawResult"]["structuredContent"] == {"city": "Oslo", "value": 21.5,
                                                         "unit": "celsius"}
    bad = drive(fixture_url, mode, "--list-first", "call", "add", json.dumps({"a": "x", "b": 1}))
    assert bad["rawResult"]["isError"] is True
    failed = drive(fixture_url, mode, "call", "fail", "{}")
    assert failed["rawResult"]["isError"] is True
    mixed = drive(fixture_url, mode, "call", "mixed", "{}")
    assert [b["type"] for b in mixed["rawResult"]["content"]] == ["text", "image", "resource"]
    if mode == "modern":
        assert add["rawResult"]["resultType"] == "complete"
        assert add["rawResult"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
            "fixture")


@pytest.mark.parametrize("mode", MODES)
def test_unknown_tool_is_a_protocol_error(official_python, fixture_url, mode):
    report = drive(fixture_url, mode, "call", "no_such_tool", "{}", check=False)
    assert report["ok"] is False
    assert report["error"]["code"] == -32602


@pytest.mark.parametrize("mode", MODES)
def test_progress_streams_before_the_result(official_python, fixture_url, mode):
    report = drive(fixture_url, mode, "progress", "progress", json.dumps({"steps": 4}))
    assert [p["progress"] for p in report["progress"]] == [1, 2, 3, 4]
    assert [p["message"] for p in report["progress"]] == [f"step {i}" for i in range(1, 5)]
    assert all(p["total"] == 4 for p in report["progress"])
    assert report["rawResult"]["content"][0]["text"] == "ok"


@pytest.mark.parametrize("mode", MODES)
def test_elicitation(official_python, asking_url, mode):
    accepted = drive(asking_url, mode, "--elicit-json", '{"name": "Grace"}', "call",
                     "ask_contact", "{}")
    assert accepted["rawResult"]["content"][0]["text"] == "Grace (30)"
    assert [r["method"] for r in accepted["serverRequests"]] == ["elicitation/create"]
    assert accepted["serverRequests"][0]["params"]["message"] == "Who are you?"
    declined = drive(asking_url, mode, "--elicit-json", "decline", "call", "ask_contact", "{}")
    assert declined["rawResult"]["content"][0]["text"] == "user said decline"
    if mode == "modern":
        # No server-to-client request on 2026-07-28 HTTP: the question came as a round.
        results = [e["msg"]["result"] for e in accepted["wire"]
                   if e["dir"] != "send" and "result" in e["msg"]]
        assert any(r.get("resultType") == "input_required" for r in results)
        assert not any("method" in e["msg"] and "id" in e["msg"] for e in accepted["wire"]
                       if e["dir"] != "send")


@pytest.mark.parametrize("mode", MODES)
def test_sampling(official_python, asking_url, mode):
    report = drive(asking_url, mode, "--sampling-text", "a fine summary", "call", "summarize",
                   '{"text": "long"}')
    text = report["rawResult"]["content"][0]["text"]
    assert text == "official-client-canned: a fine summary"
    assert [r["method"] for r in report["serverRequests"]] == ["sampling/createMessage"]


@pytest.mark.parametrize("mode", MODES)
def test_roots(official_python, asking_url, mode):
    report = drive(asking_url, mode, "--roots", "file:///tmp/a,file:///tmp/b", "call", "roots",
                   "{}")
    assert report["rawResult"]["content"][0]["text"] == "file:///tmp/a,file:///tmp/b"
    assert [r["method"] for r in report["serverRequests"]] == ["roots/list"]


@pytest.mark.parametrize("mode", MODES)
def test_resources(official_python, asking_url, mode):
    listed = drive(asking_url, mode, "list-resources")
    assert [t["uriTemplate"] for t in listed["resourceTemplates"]] == [
        "test://template/{id}/data"]
    read = drive(asking_url, mode, "read", "test://template/7/data")
    contents = read["rawResult"]["contents"]
    assert contents[0]["uri"] == "test://template/7/data"
    assert contents[0]["mimeType"] == "application/json"
    assert json.loads(contents[0]["text"]) == {"id": "7"}


@pytest.mark.parametrize("mode", MODES)
def test_prompts(official_python, asking_url, mode):
    listed = drive(asking_url, mode, "list-prompts")
    greet = {p["name"]: p for p in listed["prompts"]}["greet"]
    assert [a["name"] for a in greet["arguments"]] == ["name"]
    got = drive(asking_url, mode, "get-prompt", "greet", '{"name": "Ada"}')
    messages = got["rawResult"]["messages"]
    assert messages[0]["content"]["text"] == "Please greet Ada."


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_calls_share_one_endpoint(official_python, fixture_url, mode):
    report = drive(fixture_url, mode, "concurrent", "add", '{"a": 1, "b": 2}', "6")
    assert [r["result"]["structuredContent"] for r in report["results"]] == [{"result": 3}] * 6


@pytest.mark.parametrize("mode", MODES)
def test_eight_concurrent_blocking_calls_overlap(official_python, mode):
    """Each tools/call POST gets its own handler thread: eight blocking calls meet at a
    barrier (a broken barrier would turn them into isError results)."""
    app = rendezvous_server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        report = drive(running.base + "/mcp", mode, "concurrent", "rendezvous", "{}", "8")
    texts = [r["result"]["content"][0]["text"] for r in report["results"]]
    assert texts == ["met"] * 8


@pytest.fixture(scope="module")
def cli_served_url() -> Iterator[str]:
    """``python -m mcpsync serve tests/interop/servers/asking_server.py:server``."""
    port = free_port()
    target = str(Path(__file__).with_name("servers") / "asking_server.py") + ":server"
    argv = [sys.executable, "-m", "mcpsync", "serve", target, "--host", "127.0.0.1",
            "--port", str(port)]
    with serving_process(argv, port, cwd=ROOT, env=ENV) as base:
        yield base + "/mcp"


@pytest.mark.parametrize("mode", MODES)
def test_python_m_mcpsync_serve(official_python, cli_served_url, mode):
    report = drive(cli_served_url, mode, "--elicit-json", '{"name": "Lin", "age": 41}', "call",
                   "ask_contact", "{}")
    assert report["rawResult"]["content"][0]["text"] == "Lin (41)"
    progress = drive(cli_served_url, mode, "progress", "count", '{"steps": 3}')
    assert [p["progress"] for p in progress["progress"]] == [1, 2, 3]


def test_auto_mode_discovers_2026_07_28(official_python, fixture_url):
    report = run_official_client(["--mode", "auto", "--list-first", "call", "add",
                                  '{"a": 1, "b": 1}'], url=fixture_url, env=ENV)
    assert report["protocolVersion"] == "2026-07-28"
    assert report["serverInfo"]["name"] == "fixture"
    sent = [e["msg"].get("method") for e in report["wire"] if e["dir"] == "send"]
    assert sent[0] == "server/discover" and "initialize" not in sent
    check_wire(report, "modern")
