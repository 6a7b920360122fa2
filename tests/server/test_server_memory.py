"""A Server and a Client connected in memory: the whole tool surface, validated on the wire."""

from __future__ import annotations

import threading

import pytest

from mcpsync import (
    CallToolResult,
    Client,
    ClientMiddleware,
    ContextClosedError,
    HandlerContext,
    InvalidParamsError,
    MCPError,
    MethodNotFoundError,
    RequestTimeoutError,
    Server,
    ServerLimits,
)
from mcpsync.protocol.jsonrpc import ErrorResponse, Notification, Request, Response
from mcpsync.transports.memory import memory_pair
from tests.helpers import WAIT
from tests.server import fixture_server
from tests.spec import validate_message
from tests.wire import WireRecorder


@pytest.fixture
def recorded():
    server = fixture_server.server
    recorder = WireRecorder().install(server)
    yield server, recorder
    server.recv_middleware.remove(recorder.recv)
    server.send_middleware.remove(recorder.send)


def test_initialize_and_identity(recorded):
    server, recorder = recorded
    with Client.memory(server) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info.name == "fixture"
        assert client.server_info.title == "Fixture server"
        assert client.instructions == "For tests."
        assert client.server_capabilities["tools"] == {"listChanged": True}
        client.ping()
    for wire, method in recorder.pairs():
        validate_message("2025-11-25", wire, method)


def test_every_tool_result_validates_against_the_spec(recorded):
    server, recorder = recorded
    with Client.memory(server) as client:
        tools = {tool.name: tool for tool in client.list_tools()}
        assert tools["echo"].title == "Echo"
        assert tools["echo"].annotations.read_only_hint is True
        assert tools["add"].output_schema["properties"]["result"] == {"type": "integer"}
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        added = client.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"result": 5} and added.text == "5"
        reading = client.call_tool("reading", {"city": "Oslo", "unit": "fahrenheit",
                                               "precision": 2})
        assert reading.structured_content == {"city": "Oslo", "value": 21.46,
                                              "unit": "fahrenheit"}
        mixed = client.call_tool("mixed")
        assert [block.type for block in mixed.content] == ["text", "image", "resource"]
        assert mixed.content[2].resource.text == "inside"
        failed = client.call_tool("fail", {"message": "kaput"})
        assert failed.is_error and "kaput" in failed.text
        invalid = client.call_tool("add", {"a": "x"})
        assert invalid.is_error
        assert "'b' is a required property" in invalid.text and "'a'" in invalid.text
        client.call_tool("progress", {"steps": 2}, on_progress=lambda p: None)
    for wire, method in recorder.pairs():
        validate_message("2025-11-25", wire, method)


def test_protocol_errors(recorded):
    server, _ = recorded
    with Client.memory(server) as client:
        with pytest.raises(InvalidParamsError, match="Unknown tool: nope"):
            client.call_tool("nope")
        with pytest.raises(InvalidParamsError) as info:
            client.call_tool("protocol_fail")
        assert info.value.data == {"why": "test"}
        with pytest.raises(InvalidParamsError, match="arguments"):
            client.request("tools/call", {"name": "add", "arguments": [1, 2]})
        with pytest.raises(InvalidParamsError, match="name"):
            client.request("tools/call", {"arguments": {}})
        with pytest.raises(MethodNotFoundError):
            client.request("no/such/method")
        with pytest.raises(MCPError, match="already initialized"):
            client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        client.ping()  # still serving


def test_progress_reaches_the_caller_in_order_before_return(recorded):
    server, recorder = recorded
    seen = []
    with Client.memory(server) as client:
        result = client.call_tool("progress", {"steps": 20}, on_progress=seen.append)
    assert result.text == "ok"
    assert [p.progress for p in seen] == [float(i) for i in range(1, 21)]
    assert seen[0].total == 20 and seen[0].message == "step 1"
    notes = [w for w, _ in recorder.pairs() if w.get("method") == "notifications/progress"]
    assert len(notes) == 20


def test_progress_is_a_noop_without_token(recorded):
    server, recorder = recorded
    with Client.memory(server) as client:
        client.call_tool("progress", {"steps": 3})
    assert not [w for w, _ in recorder.pairs() if w.get("method") == "notifications/progress"]


def test_logging_honours_set_level(recorded):
    server, _ = recorded
    logs = []
    with Client.memory(server, on_log=logs.append) as client:
        client.call_tool("chatty")
        client.request("logging/setLevel", {"level": "warning"})
        client.call_tool("chatty")
        with pytest.raises(InvalidParamsError):
            client.request("logging/setLevel", {"level": "loud"})
    # Closing joins the notification thread, so every callback has run by now.
    assert [m.level for m in logs[:4]] == ["debug", "info", "warning", "error"]
    assert [m.level for m in logs[4:]] == ["warning", "error"]
    assert logs[0].logger == "fixture" and logs[0].data == {"level": "debug"}


def test_timeout_cancels_cooperative_tool_and_client_stays_usable(tmp_path):
    server = Server("t")
    saw = threading.Event()

    @server.tool()
    def wait(ctx: HandlerContext) -> str:
        ctx.sleep(WAIT)
        saw.set()
        return "no"

    @server.tool()
    def quick() -> str:
        return "yes"

    with Client.memory(server) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("wait", timeout=0.1)
        assert client.call_tool("quick").text == "yes"


def test_cancelled_tool_sends_no_response():
    server = Server("t")
    entered, finished = threading.Event(), threading.Event()

    @server.tool()
    def wait(ctx: HandlerContext) -> str:
        entered.set()
        try:
            ctx.sleep(WAIT)
        finally:
            finished.set()
        return "late"

    raw, end = memory_pair()
    session = server.connect(end)
    try:
        raw.send(Request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "raw", "version": "0"}}))
        init = raw.receive()
        assert isinstance(init, Response) and init.result["protocolVersion"] == "2025-06-18"
        raw.send(Notification("notifications/initialized"))
        raw.send(Request(2, "tools/call", {"name": "wait"}))
        assert entered.wait(WAIT)
        raw.send(Notification("notifications/cancelled", {"requestId": 2, "reason": "test"}))
        assert finished.wait(WAIT)
        raw.send(Request(3, "ping"))
        answer = raw.receive()  # the next message is the ping's answer, not id 2's
        assert isinstance(answer, Response) and answer.id == 3
    finally:
        session.close()
        raw.close()


def test_requests_before_initialize_are_refused_but_ping_works():
    server = Server("t")
    raw, end = memory_pair()
    session = server.connect(end)
    try:
        raw.send(Request(1, "tools/list"))
        refused = raw.receive()
        assert isinstance(refused, ErrorResponse) and refused.error["code"] == -32600
        raw.send(Request(2, "ping"))
        assert isinstance(raw.receive(), Response)
        raw.send(Request(3, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                           "clientInfo": {"name": "raw", "version": "0"}}))
        init = raw.receive()
        assert init.result["protocolVersion"] == "2025-11-25"  # unknown → our latest
    finally:
        session.close()
        raw.close()


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_each_handshake_version(version, recorded):
    server, recorder = recorded
    with Client.memory(server, protocol_version=version) as client:
        assert client.protocol_version == version
        tools = {t.name: t for t in client.list_tools()}
        added = client.call_tool("add", {"a": 1, "b": 1})
        assert added.text == "2"
        if version >= "2025-06-18":
            assert tools["add"].output_schema is not None
            assert added.structured_content == {"result": 2}
        else:  # structured output did not exist yet
            assert tools["add"].output_schema is None
            assert added.structured_content is None
    schema_revision = version if version != "2024-11-05" else "2025-03-26"
    for wire, method in recorder.pairs():
        validate_message(schema_revision, wire, method)


def test_pagination_returns_every_tool():
    server = Server("many", limits=ServerLimits(page_size=3))
    for i in range(10):
        server.add_tool(lambda: "x", name=f"t{i}")
    with Client.memory(server) as client:
        assert [t.name for t in client.list_tools()] == [f"t{i}" for i in range(10)]
        first = client.request("tools/list")
        assert len(first["tools"]) == 3 and "nextCursor" in first
        with pytest.raises(InvalidParamsError, match="cursor"):
            client.request("tools/list", {"cursor": "garbage!"})


def test_list_changed_is_sent_when_tools_change():
    server = Server("dyn")
    got = threading.Event()
    seen = []

    def note(method, params):
        seen.append(method)
        got.set()

    with Client.memory(server, on_notification=note) as client:
        client.ping()
        server.add_tool(lambda: "new", name="fresh")
        assert got.wait(WAIT)
        assert seen == ["notifications/tools/list_changed"]
        assert [t.name for t in client.list_tools()] == ["fresh"]
        server.remove_tool("fresh")
        assert client.list_tools() == []


def test_context_after_response_raises_and_detach_outlives_it():
    server = Server("bg")
    kept = {}
    done = threading.Event()
    errors = []

    @server.tool()
    def start(ctx: HandlerContext) -> str:
        kept["ctx"] = ctx
        kept["detached"] = ctx.detach()
        return "started"

    notes = []
    logged = threading.Event()

    def on_log(message):
        notes.append(message)
        logged.set()

    with Client.memory(server, on_log=on_log) as client:
        assert client.call_tool("start").text == "started"
        with pytest.raises(ContextClosedError):
            kept["ctx"].log("info", "too late")

        def background():
            try:
                kept["detached"].log("info", "from the background")
            except Exception as exc:
                errors.append(exc)
            done.set()

        threading.Thread(target=background).start()
        assert done.wait(WAIT)
        assert logged.wait(WAIT)
    assert errors == []
    assert [n.data for n in notes] == ["from the background"]
    assert kept["detached"].cancelled.is_set()  # the session ended with the client


def test_method_handler_escape_hatch_and_server_reverse_request():
    server = Server("raw")

    @server.method_handler("custom/echo")
    def custom(ctx: HandlerContext, params: dict) -> dict:
        return {"got": params, "id": ctx.request_id}

    with Client.memory(server) as client:
        result = client.request("custom/echo", {"x": 1})
        assert result["got"] == {"x": 1}


def test_call_tool_result_type():
    server = Server("typed")

    @server.tool()
    def full() -> CallToolResult:
        from mcpsync import TextContent

        return CallToolResult(content=[TextContent("a")], is_error=True, meta={"k": 1})

    with Client.memory(server) as client:
        result = client.call_tool("full")
        assert result.is_error and result.text == "a" and result.meta == {"k": 1}


def test_four_middleware_stacks_in_order():
    """client-send → server-recv → (handler) → server-send → client-recv; outermost first."""
    order = []

    def tap(label):
        def middleware(message, next_):
            if getattr(message, "method", None) == "tools/call" or (
                    isinstance(message, Response) and "content" in message.result):
                order.append(label)
            next_(message)
        return middleware

    server = Server("mw")
    server.add_tool(lambda: "x", name="t")
    server.recv_middleware[:] = [tap("server-recv-outer"), tap("server-recv-inner")]
    server.send_middleware[:] = [tap("server-send")]
    with Client.memory(server, middleware=ClientMiddleware(send=[tap("client-send")],
                       recv=[tap("client-recv")])) as client:
        client.call_tool("t")
    assert order == ["client-send", "server-recv-outer", "server-recv-inner", "server-send",
                     "client-recv"]
