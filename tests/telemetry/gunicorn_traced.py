"""The fixture server under gunicorn, wrapped in ``opentelemetry-instrumentation-wsgi``'s
middleware, each worker tracing into ``OTEL_SPANS_FILE`` (configured when the worker
imports this module: gunicorn forks first, so every worker has its own SDK)."""

from __future__ import annotations

from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware

from tests.interop import otel_file
from tests.server.fixture_server import server

otel_file.configure()
app = OpenTelemetryMiddleware(server.wsgi_app(path="/mcp"))
