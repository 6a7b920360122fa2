"""The telemetry core on its own: what one operation records, on each side."""

from __future__ import annotations

import threading

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from mcpsync.dispatch.inbound import TransportContext
from mcpsync.errors import MCPError, RequestTimeoutError
from mcpsync.telemetry import Instrumentation, Telemetry

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_without_an_sdk_nothing_is_made():
    # The global providers are the API's proxies here: no SDK was configured globally.
    assert Instrumentation(Telemetry(), "server").inbound("ping", {}, 1) is None
    assert Instrumentation(Telemetry(), "client").outbound("ping", {}, 1) is None


def test_turned_off_nothing_is_made(sdk):
    off = Telemetry(enabled=False, tracer_provider=sdk.telemetry.tracer_provider)
    assert Instrumentation(off, "server").inbound("ping", {}, 1) is None
    assert Telemetry.of(False).enabled is False and Telemetry.of(None).enabled
    with pytest.raises(TypeError):
        Telemetry.of("yes")  # type: ignore[arg-type]


def test_a_server_span_continues_the_trace_in_meta(sdk):
    server = Instrumentation(sdk.telemetry, "server", known=lambda kind, name: name == "add")
    transport = TransportContext("http", remote_addr="10.0.0.7", session_id="s-1")
    params = {"name": "add", "arguments": {"a": 1}, "_meta": {"traceparent": PARENT}}
    operation = server.inbound("tools/call", params, 7, transport=transport,
                               protocol_version="2025-11-25")
    assert trace.get_current_span() is operation.span  # the handler's current span
    operation.succeeded({"content": []})
    assert trace.get_current_span() is not operation.span
    (span,) = sdk.finished()
    assert span.name == "tools/call add" and span.kind is SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == PARENT.split("-")[1]
    assert format(span.parent.span_id, "016x") == PARENT.split("-")[2]
    assert dict(span.attributes) == {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool", "mcp.protocol.version": "2025-11-25",
        "network.transport": "tcp", "network.protocol.name": "http",
        "jsonrpc.request.id": "7", "mcp.session.id": "s-1", "client.address": "10.0.0.7"}
    assert span.status.status_code is StatusCode.UNSET
    (point,) = sdk.points("mcp.server.operation.duration")
    assert "jsonrpc.request.id" not in point.attributes
    assert point.attributes["gen_ai.tool.name"] == "add" and point.count == 1


def test_an_unknown_tool_name_is_other(sdk):
    server = Instrumentation(sdk.telemetry, "server", known=lambda kind, name: False)
    server.inbound("tools/call", {"name": "x" * 10_000}, 1).failed(-32602, "Unknown tool")
    (span,) = sdk.finished()
    assert span.name == "tools/call _OTHER"
    assert span.attributes["error.type"] == "-32602"
    assert span.attributes["rpc.response.status_code"] == "-32602"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "Unknown tool"


def test_a_bad_traceparent_falls_back_to_the_ambient_context(sdk):
    server = Instrumentation(sdk.telemetry, "server")
    tracer = sdk.telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("http request") as outer:
        ambient = otel_context.get_current()
    for meta in ({"traceparent": "00-zz-yy-01"}, {"traceparent": 5}, {}):
        server.inbound("ping", {"_meta": meta}, 1, ambient=ambient).succeeded()
    spans = [s for s in sdk.finished() if s.name == "ping"]
    assert len(spans) == 3
    assert all(s.parent.span_id == outer.get_span_context().span_id for s in spans)
    assert all(not s.links for s in spans)


def test_meta_parent_wins_and_the_ambient_span_is_linked(sdk):
    server = Instrumentation(sdk.telemetry, "server")
    tracer = sdk.telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("http request") as outer:
        ambient = otel_context.get_current()
    server.inbound("ping", {"_meta": {"traceparent": PARENT}}, 1, ambient=ambient).succeeded()
    span = next(s for s in sdk.finished() if s.name == "ping")
    assert format(span.parent.span_id, "016x") == PARENT.split("-")[2]
    assert [link.context.span_id for link in span.links] == [
        outer.get_span_context().span_id]


def test_a_client_span_is_injected_into_a_new_meta(sdk):
    client = Instrumentation(sdk.telemetry, "client")
    callers_meta = {"progressToken": 3}
    params = {"name": "greet", "_meta": callers_meta}
    operation = client.outbound("tools/call", params, 4)
    assert callers_meta == {"progressToken": 3}  # the caller's dict is not changed
    assert params["_meta"]["progressToken"] == 3
    traceparent = params["_meta"]["traceparent"]
    operation.succeeded({"isError": True, "content": []})
    (span,) = sdk.finished()
    assert span.kind is SpanKind.CLIENT and span.name == "tools/call greet"
    assert traceparent.split("-")[2] == format(span.context.span_id, "016x")
    assert span.attributes["error.type"] == "tool_error"
    (point,) = sdk.points("mcp.client.operation.duration")
    assert point.attributes["error.type"] == "tool_error"


def test_an_exception_is_named_not_quoted(sdk):
    server = Instrumentation(sdk.telemetry, "server")
    server.inbound("tools/call", {"name": "t"}, 1).raised(KeyError("password=hunter2"))
    server.inbound("tools/call", {"name": "t"}, 2).raised(MCPError("nope", code=-32002))
    Instrumentation(sdk.telemetry, "client").outbound("ping", {}, 3).raised(
        RequestTimeoutError("slow"))
    first, second, third = sdk.finished()
    assert first.attributes["error.type"] == "KeyError"
    assert first.status.description == "Internal error"
    assert [dict(e.attributes) for e in first.events] == [{"exception.type": "KeyError"}]
    assert "hunter2" not in repr(first.to_json())
    assert second.attributes["error.type"] == "-32002"
    assert third.attributes["error.type"] == "timeout"


def test_span_events_are_bounded(sdk):
    limited = Telemetry(tracer_provider=sdk.telemetry.tracer_provider, max_span_events=2)
    operation = Instrumentation(limited, "server").inbound("tools/call", {"name": "t"}, 1)
    assert [operation.event("progress", {"n": n}) for n in range(4)] == [
        True, True, False, False]
    operation.succeeded()
    (span,) = sdk.finished()
    assert [e.attributes["n"] for e in span.events] == [0, 1]


def test_arguments_are_recorded_only_when_asked(sdk):
    params = {"name": "t", "arguments": {"secret": "s3"}}
    Instrumentation(sdk.telemetry, "server").inbound("tools/call", params, 1).succeeded()
    opted = Telemetry(tracer_provider=sdk.telemetry.tracer_provider, record_arguments=True)
    Instrumentation(opted, "server").inbound("tools/call", params, 2).succeeded()
    plain, recorded = sdk.finished()
    assert "gen_ai.tool.call.arguments" not in plain.attributes
    assert recorded.attributes["gen_ai.tool.call.arguments"] == '{"secret": "s3"}'


def test_resource_uris_are_attributes_not_names_unless_asked(sdk):
    params = {"uri": "file:///a/b.txt"}
    Instrumentation(sdk.telemetry, "server").inbound("resources/read", params, 1).succeeded()
    opted = Telemetry(tracer_provider=sdk.telemetry.tracer_provider,
                      resource_uri_in_span_name=True)
    Instrumentation(opted, "server").inbound("resources/read", params, 2).succeeded()
    plain, named = sdk.finished()
    assert plain.name == "resources/read" and named.name == "resources/read file:///a/b.txt"
    assert plain.attributes["mcp.resource.uri"] == "file:///a/b.txt"
    (point,) = sdk.points("mcp.server.operation.duration")
    assert "mcp.resource.uri" not in point.attributes


def test_operations_on_many_threads_keep_their_own_parents(sdk):
    server = Instrumentation(sdk.telemetry, "server")

    def handle(n: int) -> None:
        parent = f"00-{n:032x}-{n:016x}-01"
        operation = server.inbound("ping", {"_meta": {"traceparent": parent}}, n)
        assert trace.get_current_span() is operation.span
        operation.succeeded()

    threads = [threading.Thread(target=handle, args=(n,), name=f"t-{n}") for n in
               range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    spans = sdk.finished()
    assert sorted(s.context.trace_id for s in spans) == list(range(1, 9))


def test_importing_mcpsync_does_not_import_opentelemetry():
    """The API is imported when the first message is handled, not before (cold start)."""
    import subprocess
    import sys

    code = ("import sys, mcpsync, mcpsync.http; "
            "assert 'opentelemetry' not in sys.modules, 'opentelemetry imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_serving_does_not_import_opentelemetry_for_an_application_that_does_not():
    """Installed but unused, the API is never imported by mcpsync: its import would cost
    the first message about 25 ms, for nothing to record."""
    import subprocess
    import sys

    code = "\n".join([
        "import sys",
        "from mcpsync import Client, Server",
        "server = Server('plain')",
        "server.tool()(lambda text: text)",
        "with Client.memory(server) as client:",
        "    client.list_tools()",
        "assert 'opentelemetry' not in sys.modules, 'opentelemetry imported'",
    ])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
