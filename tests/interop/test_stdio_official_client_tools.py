"""The official SDK client (mcp 2.3.0, legacy mode) listing and calling a mcpsync stdio server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.interop.peers import run_official_client
from tests.spec import validate, validate_message

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = [sys.executable, str(ROOT / "tests" / "server" / "fixture_server.py")]
RENDEZVOUS = [sys.executable, str(Path(__file__).with_name("servers") / "rendezvous_server.py")]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def drive(server, *args):
    report = run_official_client(list(args), server, env=ENV)
    sent = [e["msg"] for e in report["wire"] if e["dir"] == "send"]
    methods = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
    for entry in report["wire"]:
        if entry["dir"] != "send":
            validate_message("2025-11-25", entry["msg"], methods.get(entry["msg"].get("id")))
    return report


def test_tools_are_listed_with_their_schemas(official_python):
    report = drive(FIXTURE, "list-tools")
    assert report["protocolVersion"] == "2025-11-25"
    tools = {t["name"]: t for t in report["tools"]}
    assert {"echo", "add", "reading", "mixed", "slow", "progress"} <= set(tools)
    assert tools["echo"]["title"] == "Echo"
    assert tools["echo"]["annotations"]["readOnlyHint"] is True
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["outputSchema"]["properties"]["result"] == {"type": "integer"}
    assert tools["reading"]["outputSchema"]["required"] == ["city", "value", "unit"]
    for tool in tools.values():
        validate("2025-11-25", "Tool", tool)


def test_results_structured_content_and_errors(official_python):
    add = drive(FIXTURE, "--list-first", "call", "add", json.dumps({"a": 2, "b": 3}))
    assert add["rawResult"]["content"] == [{"type": "text", "text": "5"}]
    assert add["rawResult"]["structuredContent"] == {"result": 5}
    reading = drive(FIXTURE, "--list-first", "call", "reading", json.dumps({"city": "Oslo"}))
    assert reading["rawResult"]["structuredContent"] == {"city": "Oslo", "value": 21.5,
                                                         "unit": "celsius"}
    bad = drive(FIXTURE, "--list-first", "call", "add", json.dumps({"a": "x", "b": 1}))
    assert bad["rawResult"]["isError"] is True
    assert "'a'" in bad["rawResult"]["content"][0]["text"]
    failed = drive(FIXTURE, "call", "fail", "{}")
    assert failed["rawResult"]["isError"] is True
    mixed = drive(FIXTURE, "call", "mixed", "{}")
    assert [b["type"] for b in mixed["rawResult"]["content"]] == ["text", "image", "resource"]


def test_unknown_tool_is_a_protocol_error(official_python):
    report = run_official_client(["call", "no_such_tool", "{}"], FIXTURE, env=ENV, check=False)
    assert report["ok"] is False
    assert report["error"]["code"] == -32602


def test_progress_reaches_the_official_client(official_python):
    report = drive(FIXTURE, "progress", "progress", json.dumps({"steps": 4}))
    assert [p["progress"] for p in report["progress"]] == [1, 2, 3, 4]


def test_eight_concurrent_blocking_calls_overlap(official_python):
    report = drive(RENDEZVOUS, "concurrent", "rendezvous", "{}", "8")
    texts = [r["result"]["content"][0]["text"] for r in report["results"]]
    assert texts == ["met"] * 8  # a broken barrier would have made these isError results


@pytest.mark.parametrize("mode", ["modern", "auto"])
def test_official_client_in_2026_07_28_mode(official_python, mode):
    report = run_official_client(["--mode", mode, "--list-first", "call", "add",
                                  json.dumps({"a": 20, "b": 22})], FIXTURE, env=ENV)
    assert report["protocolVersion"] == "2026-07-28"
    raw = report["rawResult"]
    assert raw["structuredContent"] == {"result": 42} and raw["resultType"] == "complete"
    assert raw["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "fixture"
    for entry in report["wire"]:
        if entry["dir"] != "send" and "result" in entry["msg"]:
            validate("2026-07-28", "Result", entry["msg"]["result"])
