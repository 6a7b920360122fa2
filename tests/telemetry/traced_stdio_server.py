"""A stdio server whose process configures the OpenTelemetry SDK globally (as an
application would), writing its spans to ``OTEL_SPANS_FILE`` (``tests/interop/otel_file.py``):
a traced client's stdio child must continue the client's trace."""

from __future__ import annotations

from mcpsync import Server
from tests.interop import otel_file

otel_file.configure()
server = Server("traced-stdio")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    server.run_stdio()
