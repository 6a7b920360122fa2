"""Under gunicorn (a gthread worker, forked from the master) with
``opentelemetry-instrumentation-wsgi``: the MCP server span is a child of the WSGI request
span (an untraced client), or of the client's span with the WSGI span linked (a traced
client); both eras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from mcpsync import Client, Telemetry
from tests.helpers import WAIT, require_module, wait_until
from tests.interop import otel_file
from tests.serving import free_port, gunicorn_argv, wait_for_port, with_root_on_path

require_module("gunicorn")
require_module("opentelemetry.instrumentation.wsgi")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="gunicorn is POSIX only")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def traced_gunicorn(tmp_path_factory):
    spans_file = tmp_path_factory.mktemp("gunicorn") / "spans.jsonl"
    port = free_port()
    # One worker: a 2025-11-25 session lives in the worker that made it, and this app
    # shares no session store, so with two the call after initialize could reach the
    # other worker ("Session not found": it did, on a loaded machine).
    argv = gunicorn_argv("tests.telemetry.gunicorn_traced:app", port, workers=1)
    env = with_root_on_path(OTEL_SPANS_FILE=str(spans_file))
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}/mcp", spans_file
    finally:
        proc.terminate()
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(WAIT)


def _served(spans_file, trace_ids=None):
    spans = otel_file.read(spans_file)
    return spans, [s for s in spans if s["name"] == "tools/call add" and s["kind"] == "SERVER"
                   and (trace_ids is None or s["trace_id"] in trace_ids)]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_an_untraced_clients_call_is_a_child_of_the_wsgi_span(traced_gunicorn, version):
    url, spans_file = traced_gunicorn
    before = {s["span_id"] for s in _served(spans_file)[1]}
    with Client.http(url, protocol_version=version, timeout=WAIT,
                     telemetry=Telemetry(enabled=False)) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"

    def found():
        return [s for s in _served(spans_file)[1] if s["span_id"] not in before]

    def parent_written() -> bool:  # the WSGI span ends after the response went out
        ids = {s["span_id"] for s in otel_file.read(spans_file)}
        return len(found()) == 1 and found()[0]["parent_id"] in ids

    wait_until(parent_written, timeout=WAIT, message="no MCP server span and its parent")
    (serving,) = found()
    spans = otel_file.read(spans_file)
    (http_span,) = [s for s in spans if s["span_id"] == serving["parent_id"]]
    assert http_span["kind"] == "SERVER" and http_span["name"].startswith("POST")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_traced_clients_call_is_its_child(traced_gunicorn, version, sdk):
    url, spans_file = traced_gunicorn
    with Client.http(url, protocol_version=version, timeout=WAIT,
                     telemetry=sdk.telemetry) as client:
        sdk.spans.clear()
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
    (ours,) = [s for s in sdk.finished() if s.name == "tools/call add"
               and s.kind is SpanKind.CLIENT]
    trace_id = format(ours.context.trace_id, "032x")
    def link_written() -> bool:  # the WSGI span ends after the response went out
        spans, served = _served(spans_file, {trace_id})
        ids = {s["span_id"] for s in spans}
        return len(served) == 1 and set(served[0]["links"]) <= ids

    wait_until(link_written, timeout=WAIT,
               message="no MCP server span in the client's trace, or its linked span")
    (serving,) = _served(spans_file, {trace_id})[1]
    assert serving["parent_id"] == format(ours.context.span_id, "016x")
    (linked,) = serving["links"]  # the WSGI request's span
    (http_span,) = [s for s in otel_file.read(spans_file) if s["span_id"] == linked]
    assert http_span["kind"] == "SERVER" and http_span["name"].startswith("POST")
