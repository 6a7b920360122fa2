"""The audit log's trace id is the request's server span's when telemetry records (the
client's trace, carried in ``_meta`` and continued by the server), over memory and HTTP in
both eras: the record can be looked up in the tracing backend."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, Server
from mcpsync.middleware import AuditLog
from tests.helpers import WAIT, require_module
from tests.serving import RunningServer

sdk_trace = require_module("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from mcpsync.telemetry import Telemetry  # noqa: E402


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(json.loads(record.getMessage()))


@pytest.fixture
def traced() -> Iterator[tuple[InMemorySpanExporter, Telemetry]]:
    spans = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield spans, Telemetry(tracer_provider=provider)
    provider.shutdown()


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("kind", ["memory", "http"])
def test_the_record_names_the_trace_of_the_server_span(
        traced: tuple[InMemorySpanExporter, Telemetry], kind: str, version: str) -> None:
    spans, telemetry = traced
    lines = Lines()
    logger = logging.getLogger(f"tests.audit.trace.{kind}.{version}")
    logger.handlers[:] = [lines]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    server = Server("traced", telemetry=telemetry)
    server.add_middleware(AuditLog(logger))

    @server.tool()
    def echo(text: str) -> str:
        return text

    with contextlib.ExitStack() as stack:
        if kind == "memory":
            client = stack.enter_context(Client.memory(
                server, protocol_version=version, telemetry=telemetry, timeout=WAIT))
        else:
            app = server.wsgi_app(path="/mcp")
            running = stack.enter_context(RunningServer(app, on_stop=app.close))
            client = stack.enter_context(Client.http(
                running.base + "/mcp", protocol_version=version, telemetry=telemetry,
                timeout=WAIT))
        spans.clear()
        client.call_tool("echo", {"text": "hi"})
    (record,) = [r for r in lines.records if r["method"] == "tools/call"]
    servers = [s for s in spans.get_finished_spans()
               if s.name == "tools/call echo" and s.kind.name == "SERVER"]
    assert len(servers) == 1
    assert record["traceId"] == f"{servers[0].context.trace_id:032x}"
