"""Configure the OpenTelemetry SDK globally to write each finished span as one JSON line
to the file named by ``OTEL_SPANS_FILE`` (a no-op when it is not set). Imported by the
official SDK's client and server scripts (run in that SDK's venv, which has the SDK: see
``scripts/install-peers``) and by mcpsync's traced test servers, so that a test can read
which span parented which across processes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any


def configure() -> None:
    path = os.environ.get("OTEL_SPANS_FILE")
    if not path:
        return
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class FileExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            with open(path, "a", encoding="utf-8") as out:
                for span in spans:
                    out.write(json.dumps(describe(span)) + "\n")
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
    trace.set_tracer_provider(provider)


def describe(span: Any) -> dict[str, Any]:
    return {"name": span.name, "kind": span.kind.name,
            "trace_id": format(span.context.trace_id, "032x"),
            "span_id": format(span.context.span_id, "016x"),
            "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
            "links": [format(link.context.span_id, "016x") for link in span.links or ()],
            "attributes": dict(span.attributes or {})}


def read(path: Any) -> list[dict[str, Any]]:
    """The spans written to ``path`` (none when the file was never written)."""
    try:
        with open(path, encoding="utf-8") as spans:
            text = spans.read()
    except FileNotFoundError:
        return []
    # Only whole lines: a process may be writing the next one as this reads.
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]
