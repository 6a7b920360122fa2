"""The client side of MRTR: several questions per round, several rounds, manual mode."""

from __future__ import annotations

import pytest

from mcpsync import (
    Client,
    ClientLimits,
    ElicitResult,
    HandlerContext,
    HostHandlers,
    ProtocolStateError,
    Server,
)
from mcpsync.client.calls import InputRequiredError
from mcpsync.types import ElicitRequestParams
from tests.client.scripted import Scripted
from tests.spec import validate
from tests.wire import WireRecorder

MODERN = "2026-07-28"


def test_several_input_requests_in_one_round_are_all_answered():
    def script(method, params):
        answers = params.get("inputResponses")
        if answers is None:
            return {"resultType": "input_required", "requestState": "opaque-1",
                    "inputRequests": {
                        "name": {"method": "elicitation/create", "params": {
                            "mode": "form", "message": "name?", "requestedSchema": {
                                "type": "object", "properties": {"n": {"type": "string"}}}}},
                        "where": {"method": "roots/list"}}}
        assert params["requestState"] == "opaque-1"
        assert set(answers) == {"name", "where"}
        return {"resultType": "complete", "content": [{"type": "text", "text": "{}/{}".format(
            answers["name"]["content"]["n"], answers["where"]["roots"][0]["uri"])}]}

    from mcpsync import Root

    peer = Scripted(script)
    try:
        with peer.client(host=HostHandlers(
                elicitation=lambda p: ElicitResult("accept", {"n": "Ada"}),
                roots=[Root("file:///w")])) as client:
            assert client.call_tool("t").text == "Ada/file:///w"
        calls = peer.sent("tools/call")
        assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"]
        for call in calls:
            validate(MODERN, "CallToolRequest", call)
    finally:
        peer.close()


def interview_server() -> tuple[Server, WireRecorder]:
    server = Server("mrtr-client", request_state_key="k")

    @server.tool()
    def interview(ctx: HandlerContext, topic: str) -> str:
        name = ctx.elicit("name?", {"type": "object", "properties": {
            "name": {"type": "string"}}}).content["name"]
        colour = ctx.elicit("colour?", {"type": "object", "properties": {
            "colour": {"type": "string"}}}).content["colour"]
        return f"{topic}: {name} likes {colour}"

    return server, WireRecorder().install(server)


def test_automatic_rounds_use_the_handler():
    server, _ = interview_server()
    answers = iter([{"name": "Ada"}, {"colour": "green"}])
    with Client.memory(server, protocol_version=MODERN,
                       host=HostHandlers(
                           elicitation=lambda p: ElicitResult("accept", next(answers)))
                       ) as client:
        assert client.call_tool("interview", {"topic": "t"}).text == "t: Ada likes green"


def test_manual_mode_hands_each_round_to_the_caller():
    server, recorder = interview_server()

    def forbidden(params):
        raise AssertionError("manual mode must not call the handler")

    with Client.memory(server, protocol_version=MODERN,
                       host=HostHandlers(elicitation=forbidden)) as client:
        with pytest.raises(InputRequiredError) as first:
            client.call_tool("interview", {"topic": "t"}, input_mode="manual")
        pending = first.value
        assert pending.round == 1 and pending.method == "tools/call"
        ((key, question),) = pending.requests.items()
        assert question.method == "elicitation/create"
        typed = question.typed_params()
        assert isinstance(typed, ElicitRequestParams) and typed.message == "name?"
        assert pending.request_state
        with pytest.raises(ValueError, match="no answer"):
            pending.retry({})
        with pytest.raises(InputRequiredError) as second:
            pending.retry({key: ElicitResult("accept", {"name": "Ada"})})
        nxt = second.value
        assert nxt.round == 2
        ((key2, question2),) = nxt.requests.items()
        assert question2.params["message"] == "colour?"
        result = nxt.retry({key2: {"action": "accept", "content": {"colour": "red"}}})
        assert result.text == "t: Ada likes red"  # the same type the call returns
    for wire, method in recorder.pairs():
        if method == "tools/call" and wire.get("result", {}).get(
                "resultType") == "input_required":
            validate(MODERN, "InputRequiredResult", wire["result"])


def test_manual_mode_for_the_whole_client_and_the_raw_request():
    server, _ = interview_server()
    with Client.memory(server, protocol_version=MODERN, host=HostHandlers(input_mode="manual",
                       extra_capabilities={"elicitation": {}})) as client:
        with pytest.raises(InputRequiredError) as info:
            client.request("tools/call", {"name": "interview", "arguments": {"topic": "x"}})
        ((key, _),) = info.value.requests.items()
        with pytest.raises(InputRequiredError) as again:
            info.value.retry({key: {"action": "accept", "content": {"name": "N"}}})
        ((key2, _),) = again.value.requests.items()
        raw = again.value.retry({key2: {"action": "accept", "content": {"colour": "c"}}})
        assert raw["resultType"] == "complete" and raw["content"][0]["text"] == "x: N likes c"
        # A per-call option overrides the client's mode (and there is no handler).
        with pytest.raises(ProtocolStateError, match="no handler"):
            client.call_tool("interview", {"topic": "x"}, input_mode="auto")


def test_manual_rounds_are_bounded_too():
    server, _ = interview_server()
    with Client.memory(server, protocol_version=MODERN, limits=ClientLimits(max_input_rounds=1),
                       host=HostHandlers(extra_capabilities={"elicitation": {}})) as client:
        with pytest.raises(InputRequiredError) as info:
            client.call_tool("interview", {"topic": "x"}, input_mode="manual")
        ((key, _),) = info.value.requests.items()
        with pytest.raises(ProtocolStateError, match="1 rounds"):
            info.value.retry({key: {"action": "accept", "content": {"name": "N"}}})


def test_bad_input_mode():
    server, _ = interview_server()
    with pytest.raises(ValueError):
        Client.memory(server, host=HostHandlers(input_mode="sometimes"))
