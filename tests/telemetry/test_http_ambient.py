"""Behind an HTTP server span (what ``opentelemetry-instrumentation-wsgi``, Flask or Django
instrumentation makes): the MCP server span's parent is the caller's span from
``params._meta`` when there is one, and the HTTP span is linked; without one, the HTTP span
is its parent. Both eras; the WSGI middleware here opens the span as those do."""

from __future__ import annotations

import contextlib

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from mcpsync import Client, HandlerContext, Server
from mcpsync.telemetry import Telemetry
from tests.helpers import WAIT
from tests.serving import RunningServer


def traced_wsgi(app, tracer):
    def wrapped(environ, start_response):
        with tracer.start_as_current_span("POST /mcp", kind=SpanKind.SERVER):
            return list(app(environ, start_response))

    return wrapped


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("client_traced", [True, False])
@pytest.mark.parametrize("on_pool", [False, True])
def test_the_http_span_is_the_parent_or_a_link(sdk, version, client_traced, on_pool):
    """``on_pool``: a tool that takes a context runs on the app's handler pool, not on the
    WSGI thread that holds the HTTP span: the span's context is carried over."""
    server = Server("ambient", telemetry=sdk.telemetry)

    if on_pool:
        @server.tool()
        def add(a: int, b: int, ctx: HandlerContext) -> int:
            return a + b
    else:
        @server.tool()
        def add(a: int, b: int) -> int:
            return a + b

    app = server.wsgi_app(path="/mcp")
    tracer = sdk.telemetry.tracer_provider.get_tracer("wsgi")
    client_telemetry = sdk.telemetry if client_traced else Telemetry(enabled=False)
    with contextlib.ExitStack() as stack:
        running = stack.enter_context(RunningServer(traced_wsgi(app, tracer),
                                                    on_stop=app.close))
        client = stack.enter_context(Client.http(
            running.base + "/mcp", protocol_version=version, timeout=WAIT,
            telemetry=client_telemetry))
        sdk.spans.clear()
        client.call_tool("add", {"a": 1, "b": 2})
    spans = sdk.finished()
    (serving,) = [s for s in spans if s.name == "tools/call add" and s.kind is SpanKind.SERVER]
    http_spans = [s for s in spans if s.name == "POST /mcp"]
    (http_span,) = [s for s in http_spans if s.context.trace_id in
                    {serving.context.trace_id} | {link.context.trace_id
                                                  for link in serving.links}]
    if client_traced:
        (outgoing,) = [s for s in spans if s.name == "tools/call add"
                       and s.kind is SpanKind.CLIENT]
        assert serving.parent.span_id == outgoing.context.span_id
        assert [link.context.span_id for link in serving.links] == [
            http_span.context.span_id]
    else:
        assert serving.parent.span_id == http_span.context.span_id
        assert not serving.links
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing leaked to this thread
