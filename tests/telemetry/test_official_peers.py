"""Interop, both ways, with the official Python SDK (mcp 2.3.0), which traces when an SDK
is configured: its client's span parents our server's span (stdio and HTTP), and our
client's span parents its server's span. Cross-process spans are read from the file each
process writes (``tests/interop/otel_file.py``)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from mcpsync import Client, Server
from tests.helpers import WAIT
from tests.interop import otel_file, peers
from tests.serving import RunningServer

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
OUR_SERVER = ROOT / "tests" / "telemetry" / "traced_stdio_server.py"
THEIR_SERVER = ROOT / "tests" / "interop" / "servers" / "official_server.py"


def _theirs(spans, name):
    (span,) = [s for s in spans if s["name"] == name]
    return span


def test_the_official_client_parents_our_stdio_server(tmp_path):
    spans_file = tmp_path / "spans.jsonl"  # both processes write here
    env = {**os.environ, "OTEL_SPANS_FILE": str(spans_file), "PYTHONPATH": str(ROOT)}
    report = peers.run_official_client(["call", "add", '{"a": 1, "b": 2}'],
                                       [sys.executable, str(OUR_SERVER)], env=env)
    assert report["ok"]
    spans = otel_file.read(spans_file)
    client = _theirs(spans, "MCP send tools/call add")
    server = _theirs(spans, "tools/call add")
    assert client["kind"] == "CLIENT" and server["kind"] == "SERVER"
    assert server["trace_id"] == client["trace_id"]
    assert server["parent_id"] == client["span_id"]
    assert server["attributes"]["gen_ai.tool.name"] == "add"


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_the_official_client_parents_our_http_server(sdk, tmp_path, mode):
    server = Server("traced-http", telemetry=sdk.telemetry)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    spans_file = tmp_path / "spans.jsonl"
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        peers.run_official_client(["--mode", mode, "call", "add", '{"a": 1, "b": 2}'],
                                  url=running.base + "/mcp",
                                  env={**os.environ, "OTEL_SPANS_FILE": str(spans_file)})
    client = _theirs(otel_file.read(spans_file), "MCP send tools/call add")
    (serving,) = [s for s in sdk.finished()
                  if s.name == "tools/call add" and s.kind is SpanKind.SERVER]
    assert format(serving.context.trace_id, "032x") == client["trace_id"]
    assert format(serving.parent.span_id, "016x") == client["span_id"]


def test_our_client_parents_the_official_server(sdk, tmp_path):
    spans_file = tmp_path / "spans.jsonl"
    python = peers.require(peers.official_python)
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(Client.stdio(
            [python, str(THEIR_SERVER)], telemetry=sdk.telemetry, timeout=WAIT,
            env={**os.environ, "OTEL_SPANS_FILE": str(spans_file)}))
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
    (ours,) = [s for s in sdk.finished()
               if s.name == "tools/call add" and s.kind is SpanKind.CLIENT]
    theirs = _theirs(otel_file.read(spans_file), "tools/call add")
    assert theirs["kind"] == "SERVER"
    assert theirs["trace_id"] == format(ours.context.trace_id, "032x")
    assert theirs["parent_id"] == format(ours.context.span_id, "016x")
