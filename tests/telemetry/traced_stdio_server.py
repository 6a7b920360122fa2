"""A stdio server whose process configures the OpenTelemetry SDK globally (as an
application would) and writes each finished span as one JSON line to the file named by
``SPANS_FILE``: a traced client's stdio child must continue the client's trace."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from mcpsync import Server


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps({
                    "name": span.name, "kind": span.kind.name,
                    "trace_id": format(span.context.trace_id, "032x"),
                    "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
                    "attributes": dict(span.attributes or {})}) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter(os.environ["SPANS_FILE"])))
trace.set_tracer_provider(provider)

server = Server("traced-stdio")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    server.run_stdio()
