"""A stdio server started by a traced client continues the client's trace: a real child
process with the SDK configured globally, its spans written to a file."""

from __future__ import annotations

import sys
from pathlib import Path

from opentelemetry.trace import SpanKind

from mcpsync import Client
from tests.helpers import WAIT
from tests.interop import otel_file

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "telemetry" / "traced_stdio_server.py"


def test_the_stdio_child_continues_the_clients_trace(sdk, tmp_path):
    spans_file = tmp_path / "spans.jsonl"
    with Client.stdio([sys.executable, str(SERVER)], telemetry=sdk.telemetry, timeout=WAIT,
                      env={"PYTHONPATH": str(ROOT), "OTEL_SPANS_FILE": str(spans_file)}) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    (outgoing,) = [s for s in sdk.finished()
                   if s.name == "tools/call add" and s.kind is SpanKind.CLIENT]
    assert outgoing.attributes["network.transport"] == "pipe"
    served = otel_file.read(spans_file)
    (serving,) = [s for s in served if s["name"] == "tools/call add"]
    assert serving["kind"] == "SERVER"
    assert serving["trace_id"] == format(outgoing.context.trace_id, "032x")
    assert serving["parent_id"] == format(outgoing.context.span_id, "016x")
    assert serving["attributes"]["network.transport"] == "pipe"
