"""2026-07-28 requests served statelessly beside handshake-era sessions, on one connection."""

from __future__ import annotations

import pytest

from mcpsync import ClientLimits, HandlerContext, HostHandlers, ProtocolOptions, Server
from mcpsync.protocol.jsonrpc import ErrorResponse, Request, Response
from mcpsync.transports.memory import memory_pair
from tests.server import fixture_server
from tests.spec import validate
from tests.wire import WireRecorder

MODERN = "2026-07-28"
RESULTS = {"server/discover": "DiscoverResult", "tools/list": "ListToolsResult",
           "tools/call": "CallToolResult"}


def envelope(**extra):
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}
    meta.update(extra)
    return meta


@pytest.fixture
def raw():
    client, end = memory_pair()
    session = fixture_server.server.connect(end)
    ids = iter(range(1, 1000))

    def call(method, params=None, meta=None):
        params = dict(params or {})
        params["_meta"] = envelope() if meta is None else meta
        request_id = next(ids)
        client.send(Request(request_id, method, params))
        while True:
            reply = client.receive()
            if isinstance(reply, (Response, ErrorResponse)) and reply.id == request_id:
                return reply

    yield call
    session.close()
    client.close()


def test_discover_list_and_call_without_initialize(raw):
    discover = raw("server/discover")
    assert isinstance(discover, Response)
    result = discover.result
    assert result["supportedVersions"] == [MODERN]
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "fixture"
    assert result["ttlMs"] == 0 and result["cacheScope"] == "public"
    for method, params in (("server/discover", None), ("tools/list", None),
                           ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})):
        reply = raw(method, params)
        validate(MODERN, RESULTS[method], reply.result)
    assert raw("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}).result[
        "structuredContent"] == {"result": 3}


@pytest.mark.parametrize(("meta", "code"), [
    ({"io.modelcontextprotocol/protocolVersion": MODERN}, -32602),  # no clientCapabilities
    ({"io.modelcontextprotocol/protocolVersion": 7,
      "io.modelcontextprotocol/clientCapabilities": {}}, -32602),
])
def test_bad_envelopes(raw, meta, code):
    reply = raw("tools/list", meta=meta)
    assert isinstance(reply, ErrorResponse) and reply.error["code"] == code


def test_unsupported_version(raw):
    reply = raw("tools/list", meta=envelope(**{
        "io.modelcontextprotocol/protocolVersion": "2099-01-01"}))
    assert reply.error["code"] == -32022
    assert reply.error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    validate(MODERN, "UnsupportedProtocolVersionError", reply.to_wire())


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel",
                                    "resources/subscribe"])
def test_removed_methods(raw, method):
    reply = raw(method)
    assert reply.error["code"] == -32601


def test_logs_only_with_a_log_level_and_reverse_calls_refused():
    server = Server("modern", protocol=ProtocolOptions(modern_versions=(MODERN,)),
                    request_state_key="k")

    @server.tool()
    def chatty(ctx: HandlerContext) -> str:
        ctx.log("info", "hello")
        ctx.log("debug", "detail")
        return "done"

    @server.tool()
    def ask(ctx: HandlerContext) -> str:
        return ctx.elicit("name?", {"type": "object", "properties": {}}).action

    client, end = memory_pair()
    session = server.connect(end)
    try:
        client.send(Request(1, "tools/call", {"name": "chatty", "_meta": envelope()}))
        assert isinstance(client.receive(), Response)  # no logLevel: nothing before it
        client.send(Request(2, "tools/call", {"name": "chatty", "_meta": envelope(**{
            "io.modelcontextprotocol/logLevel": "info"})}))
        note = client.receive()
        assert note.method == "notifications/message" and note.params["data"] == "hello"
        assert isinstance(client.receive(), Response)  # debug was filtered out
        client.send(Request(3, "tools/call", {"name": "ask", "_meta": envelope()}))
        reply = client.receive()  # elicitation not declared on this request: -32021
        assert reply.error["code"] == -32021
        assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    finally:
        session.close()
        client.close()


def test_a_legacy_session_and_modern_requests_share_a_connection(raw):
    assert isinstance(raw("tools/list"), Response)
    init = raw("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "x", "version": "0"}}, meta={})
    assert init.result["protocolVersion"] == "2025-11-25"
    assert "resultType" not in raw("tools/list", meta={}).result


def test_client_pinned_to_2026_07_28_talks_statelessly():
    from mcpsync import Client

    recorder = WireRecorder().install(fixture_server.server)
    try:
        with Client.memory(fixture_server.server, protocol_version=MODERN) as client:
            assert client.protocol_version == MODERN
            assert client.server_info.name == "fixture"
            assert "echo" in {t.name for t in client.list_tools()}
            assert client.call_tool("add", {"a": 4, "b": 5}).structured_content == {
                "result": 9}
            seen = []
            client.call_tool("progress", {"steps": 3}, on_progress=seen.append)
            assert [p.progress for p in seen] == [1, 2, 3]
            client.ping()
    finally:
        fixture_server.server.recv_middleware.remove(recorder.recv)
        fixture_server.server.send_middleware.remove(recorder.send)
    methods = set(recorder.methods.values())
    assert "initialize" not in methods and "server/discover" in methods
    for wire, method in recorder.pairs():
        if method in RESULTS and "result" in wire:
            validate(MODERN, RESULTS[method], wire["result"])


def test_the_stateless_era_can_be_turned_off():
    server = Server("legacy-only", protocol=ProtocolOptions(modern_versions=()))
    client, end = memory_pair()
    session = server.connect(end)
    try:
        client.send(Request(1, "server/discover", {"_meta": envelope()}))
        reply = client.receive()
        assert isinstance(reply, ErrorResponse) and reply.error["code"] != -32022
    finally:
        session.close()
        client.close()


def mrtr_server():
    server = Server("mrtr", protocol=ProtocolOptions(modern_versions=(MODERN,)),
                    request_state_key="test-key")
    runs = []

    @server.tool()
    def interview(ctx: HandlerContext, topic: str) -> str:
        runs.append(topic)
        name = ctx.elicit("name?", {"type": "object", "properties": {
            "name": {"type": "string"}}}).content["name"]
        summary = ctx.sample(f"about {topic}", max_tokens=10).text
        roots = [r.uri for r in ctx.list_roots()]
        return f"{name}/{summary}/{','.join(roots)}"

    return server, runs


def test_mrtr_rounds_on_the_wire():
    server, runs = mrtr_server()
    client, end = memory_pair()
    session = server.connect(end)
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    meta = envelope(**{"io.modelcontextprotocol/clientCapabilities": caps})
    params = {"name": "interview", "arguments": {"topic": "mcp"}, "_meta": meta}
    try:
        client.send(Request(1, "tools/call", params))
        first = client.receive().result
        validate(MODERN, "InputRequiredResult", first)
        assert first["resultType"] == "input_required"
        (key, ask), = first["inputRequests"].items()
        assert ask["method"] == "elicitation/create"

        # Tampered, foreign and well-formed retries.
        state = first["requestState"]
        tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
        answers = {key: {"action": "accept", "content": {"name": "Ada"}}}
        client.send(Request(2, "tools/call", {**params, "inputResponses": answers,
                                              "requestState": tampered}))
        assert client.receive().error["code"] == -32602
        other = {**params, "arguments": {"topic": "other"}}
        client.send(Request(3, "tools/call", {**other, "inputResponses": answers,
                                              "requestState": state}))
        assert "different request" in client.receive().error["message"]

        client.send(Request(4, "tools/call", {**params, "inputResponses": answers,
                                              "requestState": state}))
        second = client.receive().result
        (key2, ask2), = second["inputRequests"].items()
        assert ask2["method"] == "sampling/createMessage" and key2 != key
        client.send(Request(5, "tools/call", {**params, "requestState": second["requestState"],
                                              "inputResponses": {key2: {
                                                  "role": "assistant", "model": "m",
                                                  "content": {"type": "text", "text": "ok"}}}}))
        third = client.receive().result
        (key3, ask3), = third["inputRequests"].items()
        assert ask3["method"] == "roots/list"
        client.send(Request(6, "tools/call", {**params, "requestState": third["requestState"],
                                              "inputResponses": {key3: {"roots": [
                                                  {"uri": "file:///r"}]}}}))
        final = client.receive().result
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "Ada/ok/file:///r"
        assert runs == ["mcp"] * 4  # refused states never reach the handler
    finally:
        session.close()
        client.close()


def test_expired_request_state_is_refused():
    from freezegun import freeze_time

    server, _ = mrtr_server()
    client, end = memory_pair()
    session = server.connect(end)
    meta = envelope(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
    params = {"name": "interview", "arguments": {"topic": "t"}, "_meta": meta}
    try:
        with freeze_time("2026-12-01 12:00:00"):
            client.send(Request(1, "tools/call", params))
            first = client.receive().result
        (key, _), = first["inputRequests"].items()
        with freeze_time("2026-12-01 13:00:00"):  # past the 600 s lifetime
            client.send(Request(2, "tools/call", {**params, "requestState": first[
                "requestState"], "inputResponses": {key: {"action": "decline"}}}))
            assert "expired" in client.receive().error["message"]
    finally:
        session.close()
        client.close()


def test_client_answers_mrtr_rounds_with_its_host_handlers():
    from mcpsync import Client, CreateMessageResult, Root, TextContent

    server, _ = mrtr_server()
    with Client.memory(server, protocol_version=MODERN,
                       host=HostHandlers(elicitation=lambda p: {"action": "accept",
                                                                "content": {"name": "Grace"}},
                                         sampling=lambda p: CreateMessageResult(
                                             "assistant", TextContent("short"), model="m"),
                                         roots=[Root("file:///home")])) as client:
        assert client.call_tool("interview", {"topic": "x"}).text == "Grace/short/file:///home"


def test_client_auto_picks_2026_07_28_or_falls_back_to_the_handshake():
    from mcpsync import Client

    with Client.memory(fixture_server.server, protocol_version="auto") as client:
        assert client.protocol_version == MODERN
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
    old = Server("old", protocol=ProtocolOptions(modern_versions=()))
    with Client.memory(old, protocol_version="auto") as client:
        assert client.protocol_version == "2025-11-25"
        client.ping()


@pytest.mark.parametrize(("rounds", "ok"), [(3, True), (2, False)])
def test_client_bounds_the_number_of_rounds(rounds, ok):
    from mcpsync import Client, CreateMessageResult, ProtocolStateError, Root, TextContent

    server, _ = mrtr_server()  # asks three questions, one per round
    with Client.memory(server, protocol_version=MODERN,
                       limits=ClientLimits(max_input_rounds=rounds),
                       host=HostHandlers(elicitation=lambda p: {"action": "accept",
                                                                "content": {"name": "N"}},
                                         sampling=lambda p: CreateMessageResult(
                                             "assistant", TextContent("s"), model="m"),
                                         roots=[Root("file:///r")])) as client:
        if ok:
            assert client.call_tool("interview", {"topic": "t"}).text == "N/s/file:///r"
        else:
            with pytest.raises(ProtocolStateError, match="2 rounds"):
                client.call_tool("interview", {"topic": "t"})


def test_questions_only_from_the_handler_thread_and_not_when_detached():
    import threading as _threading

    from mcpsync import Client, ProtocolStateError

    server = Server("threads", protocol=ProtocolOptions(modern_versions=(MODERN,)),
                    request_state_key="k")
    outcomes = []

    @server.tool()
    def fan_out(ctx: HandlerContext) -> str:
        def worker():
            try:
                ctx.elicit("from a thread", {"type": "object", "properties": {}})
            except ProtocolStateError as exc:
                outcomes.append(type(exc).__name__)

        t = _threading.Thread(target=worker)
        t.start()
        t.join(5)
        try:
            ctx.detach().request("roots/list")
        except ProtocolStateError as exc:
            outcomes.append(type(exc).__name__)
        return "ok"

    with Client.memory(server, protocol_version=MODERN,
                       host=HostHandlers(elicitation=lambda p: {"action": "cancel"})) as client:
        assert client.call_tool("fan_out").text == "ok"
    assert outcomes == ["ProtocolStateError", "ProtocolStateError"]


def test_ask_all_puts_several_questions_in_one_round():
    from mcpsync import Client, CreateMessageResult, Root, TextContent

    server = Server("together", protocol=ProtocolOptions(modern_versions=(MODERN,)),
                    request_state_key="k")
    attempts = []

    @server.tool()
    def survey(ctx: HandlerContext) -> str:
        attempts.append(1)
        name, reply, roots = ctx.ask_all(
            lambda: ctx.elicit("Name?", {"type": "object",
                                         "properties": {"name": {"type": "string"}}}),
            lambda: ctx.sample("Say hi", max_tokens=5),
            ctx.list_roots,
        )
        return f"{name.content['name']}/{reply.text}/{roots[0].uri}"

    client, end = memory_pair()
    session = server.connect(end)
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    params = {"name": "survey", "arguments": {},
              "_meta": envelope(**{"io.modelcontextprotocol/clientCapabilities": caps})}
    try:
        client.send(Request(1, "tools/call", params))
        first = client.receive().result
        validate(MODERN, "InputRequiredResult", first)
        methods = sorted(q["method"] for q in first["inputRequests"].values())
        assert methods == ["elicitation/create", "roots/list", "sampling/createMessage"]
    finally:
        session.close()
        client.close()

    seen_rounds = []
    with Client.memory(server, protocol_version=MODERN,
                       host=HostHandlers(elicitation=lambda p: (seen_rounds.append("e"), {
                                             "action": "accept", "content": {"name": "Ada"}})[1],
                                         sampling=lambda p: CreateMessageResult(
                                             "assistant", TextContent("hi"), model="m"),
                                         roots=[Root("file:///r")])) as c:
        attempts.clear()
        assert c.call_tool("survey", {}).text == "Ada/hi/file:///r"
        assert len(attempts) == 2  # one question round, then the answer: not four attempts


def test_the_handshake_era_can_be_turned_off():
    """A 2026-07-28-only server answers ``initialize`` with -32022 naming what it speaks
    (it raised IndexError inside the handler: "Internal error"), on every transport, and
    a client asked for the handshake says so clearly; ``auto`` finds 2026-07-28."""
    import requests

    from mcpsync import Client, UnsupportedProtocolVersionError
    from tests.serving import RunningServer

    server = Server("modern-only", protocol=ProtocolOptions(legacy_versions=()))

    @server.tool
    def echo(text: str) -> str:
        return text

    with pytest.raises(UnsupportedProtocolVersionError) as caught:
        Client.memory(server, protocol_version="2025-11-25")
    assert caught.value.data == {"supported": [MODERN], "requested": "2025-11-25"}
    assert "2026-07-28" in str(caught.value)
    with Client.memory(server, protocol_version="auto") as client:
        assert client.protocol_version == MODERN
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    with RunningServer(server.wsgi_app()) as running:
        answer = requests.post(f"{running.base}/mcp", json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Accept": "application/json, text/event-stream"}, timeout=10)
        assert answer.json()["error"]["code"] == -32022, answer.text
        assert "mcp-session-id" not in answer.headers


def test_a_server_must_speak_some_revision():
    with pytest.raises(ValueError, match="legacy_versions"):
        Server("mute", protocol=ProtocolOptions(legacy_versions=(), modern_versions=()))
