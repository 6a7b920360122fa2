"""One trace across both sides, on every transport and era: a Client call, the server's
span, the server's own call back to the client (``ctx.elicit``) and the client's answer to
it. Both sides record into one in-memory SDK (``sdk`` fixture), so parent links can be
read directly."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from mcpsync import Client, HandlerContext, HostHandlers, Server
from mcpsync.errors import MCPError
from mcpsync.types import ElicitResult
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer


def make_server(telemetry) -> Server:
    server = Server("traced", telemetry=telemetry)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def ask(ctx: HandlerContext) -> str:
        for n in range(50):  # more than max_span_events: the events are bounded
            ctx.progress(n, 50)
        answer = ctx.elicit("Your name?", {"type": "object",
                                           "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name']}"

    @server.tool()
    def chatty(ctx: HandlerContext) -> str:
        ctx.info("working on it")
        return "done"

    @server.tool()
    def forwarding(ctx: HandlerContext) -> str:
        with ctx.forward_logging("app.forwarded"):
            logging.getLogger("app.forwarded").warning("from logging")
        return "done"

    @server.tool()
    def broken() -> str:
        raise RuntimeError("db password=hunter2")

    return server


def answer(params):
    return ElicitResult(action="accept", content={"name": "Grace"})


def connect(transport: str, server: Server, telemetry, stack) -> Client:
    if transport.startswith("memory"):
        version = transport.split(":")[1]
        return stack.enter_context(Client.memory(server, protocol_version=version,
                                                 log_level="info", on_log=LOGS.append,
                                                 host=HostHandlers(elicitation=answer),
                                                 telemetry=telemetry, timeout=WAIT))
    version = transport.split(":")[1]
    app = server.wsgi_app(path="/mcp")
    running = stack.enter_context(RunningServer(app, on_stop=app.close))
    return stack.enter_context(Client.http(running.base + "/mcp", protocol_version=version,
                                           log_level="info", on_log=LOGS.append,
                                           host=HostHandlers(elicitation=answer),
                                           telemetry=telemetry, timeout=WAIT))


LOGS: list = []  # what the client's on_log received (cleared per test)

TRANSPORTS = ["memory:2025-11-25", "memory:2026-07-28", "http:2025-11-25", "http:2026-07-28"]


@pytest.fixture(params=TRANSPORTS)
def traced(request, sdk):
    import contextlib

    with contextlib.ExitStack() as stack:
        server = make_server(sdk.telemetry)
        client = connect(request.param, server, sdk.telemetry, stack)
        yield request.param, client


def _by_name(spans, name, kind):
    return [s for s in spans if s.name == name and s.kind is kind]


def test_a_tool_call_is_one_trace_from_client_to_server(traced, sdk):
    transport, client = traced
    sdk.spans.clear()
    assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    spans = sdk.finished()
    (outgoing,) = _by_name(spans, "tools/call add", SpanKind.CLIENT)
    (serving,) = _by_name(spans, "tools/call add", SpanKind.SERVER)
    assert serving.context.trace_id == outgoing.context.trace_id
    assert serving.parent.span_id == outgoing.context.span_id
    # the id on the wire, on both sides (the conventions put it on client and server spans)
    assert outgoing.attributes["jsonrpc.request.id"] == serving.attributes["jsonrpc.request.id"]
    assert serving.attributes["gen_ai.tool.name"] == "add"
    assert serving.attributes["gen_ai.operation.name"] == "execute_tool"
    if transport.startswith("http"):
        assert serving.attributes["network.transport"] == "tcp"
        assert outgoing.attributes["network.transport"] == "tcp"
    if transport.endswith("2026-07-28"):
        assert serving.attributes["mcp.protocol.version"] == "2026-07-28"
    (point,) = [p for p in sdk.points("mcp.server.operation.duration")
                if p.attributes.get("gen_ai.tool.name") == "add"]
    assert point.count == 1


def test_the_servers_question_is_a_child_of_the_tool_call(traced, sdk):
    transport, client = traced
    sdk.spans.clear()
    assert client.call_tool("ask", on_progress=lambda *_: None).text == "hello Grace"
    spans = sdk.finished()
    calls = _by_name(spans, "tools/call ask", SpanKind.CLIENT)
    served = _by_name(spans, "tools/call ask", SpanKind.SERVER)
    # one call: one trace, its 2026-07-28 rounds (retries with the answers) in it too
    call = next(c for c in calls if c.parent is None)
    assert served and all(s.context.trace_id == call.context.trace_id for s in served + calls)
    if transport.endswith("2026-07-28"):
        assert len(calls) == len(served) == 2  # asked, then answered
        assert calls[1].parent.span_id == call.context.span_id
    assert all(len(s.events) <= sdk.telemetry.max_span_events for s in served)
    assert any(e.name == "mcp.progress" for s in served for e in s.events)
    if transport.endswith("2025-11-25"):  # a real request to the client, on its session
        (question,) = _by_name(spans, "elicitation/create", SpanKind.CLIENT)
        (answered,) = _by_name(spans, "elicitation/create", SpanKind.SERVER)
        (serving,) = served
        assert question.parent.span_id == serving.context.span_id
        assert answered.parent.span_id == question.context.span_id
        assert question.attributes["jsonrpc.request.id"] \
            == answered.attributes["jsonrpc.request.id"]


def test_a_failing_tool_is_a_tool_error_without_its_text(traced, sdk):
    _, client = traced
    sdk.spans.clear()
    assert client.call_tool("broken").is_error  # an exception in a tool is an isError result
    spans = sdk.finished()
    (serving,) = _by_name(spans, "tools/call broken", SpanKind.SERVER)
    (outgoing,) = _by_name(spans, "tools/call broken", SpanKind.CLIENT)
    for span in (serving, outgoing):
        assert span.attributes["error.type"] == "tool_error"
        assert span.status.status_code is StatusCode.ERROR
        assert "hunter2" not in span.to_json()


def test_an_error_answer_sets_its_code(traced, sdk):
    _, client = traced
    sdk.spans.clear()
    with pytest.raises(MCPError):
        client.read_resource("file:///nowhere")
    spans = sdk.finished()
    (serving,) = _by_name(spans, "resources/read", SpanKind.SERVER)
    (outgoing,) = _by_name(spans, "resources/read", SpanKind.CLIENT)
    assert serving.attributes["mcp.resource.uri"] == "file:///nowhere"
    for span in (serving, outgoing):
        code = span.attributes["rpc.response.status_code"]
        assert span.attributes["error.type"] == code and int(code) < 0


def test_log_messages_carry_the_trace(traced, sdk):
    _, client = traced
    sdk.spans.clear()
    LOGS.clear()
    client.call_tool("chatty")
    (serving,) = _by_name(sdk.finished(), "tools/call chatty", SpanKind.SERVER)
    assert [e.name for e in serving.events] == ["mcp.log"]
    assert serving.events[0].attributes["level"] == "info"
    # on_log runs on the client's notification thread: it may come after the answer
    wait_until(lambda: any(m.data == "working on it" for m in LOGS), timeout=WAIT,
               message="the log message never reached on_log")
    (record,) = [m for m in LOGS if m.data == "working on it"]
    traceparent = (record.meta or {})["traceparent"]
    assert traceparent.split("-")[1:3] == [format(serving.context.trace_id, "032x"),
                                           format(serving.context.span_id, "016x")]


def test_forwarded_logging_records_carry_the_trace(traced, sdk):
    _, client = traced
    sdk.spans.clear()
    LOGS.clear()
    client.call_tool("forwarding")
    (serving,) = _by_name(sdk.finished(), "tools/call forwarding", SpanKind.SERVER)
    (event,) = serving.events
    assert event.name == "mcp.log"
    assert dict(event.attributes) == {"level": "warning", "logger": "app.forwarded"}
    wait_until(lambda: any(m.data == "from logging" for m in LOGS), timeout=WAIT,
               message="the forwarded record never reached on_log")
    (record,) = [m for m in LOGS if m.data == "from logging"]
    traceparent = (record.meta or {})["traceparent"]
    assert traceparent.split("-")[1:3] == [format(serving.context.trace_id, "032x"),
                                           format(serving.context.span_id, "016x")]


def test_telemetry_off_records_nothing(sdk):
    from mcpsync.telemetry import Telemetry

    off = Telemetry(enabled=False, tracer_provider=sdk.telemetry.tracer_provider,
                    meter_provider=sdk.telemetry.meter_provider)
    with Client.memory(make_server(off), telemetry=off) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    assert sdk.finished() == []


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_session_durations_are_recorded_on_both_sides(sdk, version):
    with Client.memory(make_server(sdk.telemetry), protocol_version=version,
                       telemetry=sdk.telemetry) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    (client_side,) = sdk.points("mcp.client.session.duration")
    assert client_side.count == 1 and client_side.sum >= 0
    (server_side,) = sdk.points("mcp.server.session.duration")  # the memory server's end
    assert server_side.count == 1


def test_handshake_era_spans_name_the_version_and_notifications_are_spans(sdk):
    with Client.memory(make_server(sdk.telemetry), protocol_version="2025-11-25",
                       telemetry=sdk.telemetry) as client:
        client.call_tool("add", {"a": 1, "b": 2})
    spans = sdk.finished()
    (serving,) = _by_name(spans, "tools/call add", SpanKind.SERVER)
    (outgoing,) = _by_name(spans, "tools/call add", SpanKind.CLIENT)
    assert serving.attributes["mcp.protocol.version"] == "2025-11-25"
    assert outgoing.attributes["mcp.protocol.version"] == "2025-11-25"
    (initialized,) = _by_name(spans, "notifications/initialized", SpanKind.SERVER)
    assert "jsonrpc.request.id" not in initialized.attributes
    (point,) = sdk.points("mcp.client.session.duration")
    assert point.attributes["mcp.protocol.version"] == "2025-11-25"
