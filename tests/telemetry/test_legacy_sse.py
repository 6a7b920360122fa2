"""The 2024-11-05 HTTP+SSE endpoints with telemetry on: a ``Client`` pointed at ``/sse``
falls back to them, and each message it POSTs to ``/messages`` is a server span in the
client's trace, the server's question back (answered on the one SSE stream) included."""

from __future__ import annotations

from opentelemetry.trace import SpanKind

from mcpsync import Client, HandlerContext, HostHandlers, Server
from mcpsync.http.replies import OPEN_STREAMS
from mcpsync.types import ElicitResult
from tests.helpers import WAIT
from tests.serving import RunningServer


def test_messages_posted_to_the_old_endpoint_are_spans_of_the_callers_trace(sdk):
    server = Server("old-transport", telemetry=sdk.telemetry)

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def ask(ctx: HandlerContext) -> str:
        answer = ctx.elicit("Your name?", {"type": "object",
                                           "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name']}"

    app = server.wsgi_app(path="/mcp")
    before = OPEN_STREAMS.count()
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/sse", telemetry=sdk.telemetry, timeout=WAIT,
            host=HostHandlers(elicitation=lambda _: ElicitResult(
                action="accept", content={"name": "Ada"}))) as client:
        (session,) = app.sessions.all()
        assert session.legacy_sse  # the HTTP+SSE transport, not Streamable HTTP
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        assert client.call_tool("ask").text == "hello Ada"
        streams = [p.value for p in sdk.points("mcpsync.server.sse_streams.open")]
        assert streams[-1] == before + 1  # the session's one stream
        version = client.protocol_version
    spans = sdk.finished()

    def one(name, kind):
        (span,) = [s for s in spans if s.name == name and s.kind is kind]
        return span

    call, served = one("tools/call add", SpanKind.CLIENT), one("tools/call add", SpanKind.SERVER)
    assert served.parent.span_id == call.context.span_id
    assert served.context.trace_id == call.context.trace_id
    assert served.attributes["jsonrpc.request.id"] == call.attributes["jsonrpc.request.id"]
    assert served.attributes["mcp.session.id"] == session.id
    assert served.attributes["network.transport"] == "tcp"
    assert served.attributes["mcp.protocol.version"] == version
    # the question goes down the SSE stream; the client's answer is POSTed back
    asked = one("tools/call ask", SpanKind.SERVER)
    question = one("elicitation/create", SpanKind.CLIENT)
    answered = one("elicitation/create", SpanKind.SERVER)
    assert question.parent.span_id == asked.context.span_id
    assert answered.parent.span_id == question.context.span_id
    assert one("notifications/initialized", SpanKind.SERVER).attributes["mcp.session.id"] \
        == session.id
    (point,) = [p for p in sdk.points("mcp.server.operation.duration")
                if p.attributes.get("gen_ai.tool.name") == "add"]
    assert point.count == 1
