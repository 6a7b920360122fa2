"""The conformance fixtures over an in-memory connection, checked the way the suite checks them.

Each test drives ``tests.conformance.everything.server`` with raw JSON-RPC messages (so what
is asserted is exactly what would cross the wire) in the handshake era (2025-11-25, after
``initialize``) and in the stateless 2026-07-28 era (a ``_meta`` envelope on every request),
and asserts the values the matching conformance scenario requires.
"""

from __future__ import annotations

import base64
import itertools
import json
import queue
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync.protocol.jsonrpc import ErrorResponse, Notification, Request, Response
from mcpsync.transports.memory import memory_pair
from tests.conformance.everything import server
from tests.helpers import WAIT
from tests.spec import validate, validate_message

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CLIENT_INFO = {"name": "conformance-test-client", "version": "1.0.0"}
#: What the suite's stateless harness declares by default.
SUITE_CAPS = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
Answer = Callable[[str, dict[str, Any]], dict[str, Any] | None]


class Wire:
    """A raw client end: sends requests, collects notifications, answers server requests.

    Every reply is validated against the schema of its revision, as the suite's harness
    does.
    """

    revision = LEGACY

    def __init__(self, answer: Answer | None = None) -> None:
        self._client, end = memory_pair()
        self._session = server.connect(end, name="conformance-test")
        self._answer = answer
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._ids = itertools.count(1)
        self.notifications: list[Notification] = []
        self.server_requests: list[Request] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            message = self._client.receive()
            if message is None:
                return
            if isinstance(message, Request):
                self.server_requests.append(message)
                result = self._answer(message.method, message.params or {}) if (
                    self._answer) else None
                if result is None:
                    self._client.send(ErrorResponse(message.id, {
                        "code": -32601, "message": f"no answer for {message.method}"}))
                else:
                    self._client.send(Response(message.id, result))
            else:
                self._inbox.put(message)

    def request(self, method: str, params: dict[str, Any] | None = None
                ) -> Response | ErrorResponse:
        request_id = next(self._ids)
        self._client.send(Request(request_id, method, params))
        while True:
            message = self._inbox.get(timeout=WAIT)
            if isinstance(message, Notification):
                self.notifications.append(message)
            elif isinstance(message, (Response, ErrorResponse)) and message.id == request_id:
                incomplete = isinstance(message, Response) and (
                    message.result.get("resultType") == "input_required")
                validate_message(self.revision, message.to_wire(),
                                 None if incomplete else method)
                if incomplete:
                    validate(self.revision, "InputRequiredResult", message.result)
                return message

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.request(method, params)
        assert isinstance(reply, Response), reply.to_wire()
        return reply.result

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.request(method, params)
        assert isinstance(reply, ErrorResponse), reply.to_wire()
        return reply.error

    def notified(self, method: str) -> list[dict[str, Any]]:
        return [n.params or {} for n in self.notifications if n.method == method]

    def close(self) -> None:
        self._session.close()
        self._client.close()
        self._reader.join(WAIT)


class Legacy(Wire):
    """A handshake-era session at 2025-11-25."""

    def __init__(self, capabilities: dict[str, Any] | None = None,
                 answer: Answer | None = None) -> None:
        super().__init__(answer)
        init = self.result("initialize", {"protocolVersion": LEGACY,
                                          "capabilities": capabilities or {},
                                          "clientInfo": CLIENT_INFO})
        assert init["protocolVersion"] == LEGACY
        self.capabilities = init["capabilities"]
        self._client.send(Notification("notifications/initialized"))


class Modern(Wire):
    """Stateless 2026-07-28 requests, each with its own envelope."""

    revision = MODERN

    def __init__(self, capabilities: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.capabilities = SUITE_CAPS if capabilities is None else capabilities

    def request(self, method: str, params: dict[str, Any] | None = None
                ) -> Response | ErrorResponse:
        params = dict(params or {})
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                "io.modelcontextprotocol/clientCapabilities": self.capabilities}
        meta.update(params.get("_meta") or {})
        params["_meta"] = meta
        return super().request(method, params)


@pytest.fixture
def legacy() -> Iterator[Legacy]:
    wire = Legacy()
    yield wire
    wire.close()


@pytest.fixture
def modern() -> Iterator[Modern]:
    wire = Modern()
    yield wire
    wire.close()


@pytest.fixture(params=[LEGACY, MODERN])
def either(request: pytest.FixtureRequest) -> Iterator[Wire]:
    wire: Wire = Legacy() if request.param == LEGACY else Modern()
    yield wire
    wire.close()


def call(wire: Wire, name: str, arguments: dict[str, Any] | None = None,
         **extra: Any) -> dict[str, Any]:
    return wire.result("tools/call", {"name": name, "arguments": arguments or {}, **extra})


def elicit_accept(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def sampled(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text},
            "model": "test-model", "stopReason": "endTurn"}


SUITE_ROOTS = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


# -- tools/list and json-schema-2020-12 ----------------------------------------------------

EXPECTED_TOOLS = {
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress",
    "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums", "test_error_handling", "json_schema_2020_12_tool",
    "test_reconnection", "test_input_required_result_elicitation",
    "test_input_required_result_sampling", "test_input_required_result_list_roots",
    "test_input_required_result_request_state", "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round", "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities", "test_missing_capability",
    "test_streaming_elicitation", "test_logging_tool", "test_trigger_tool_change",
    "test_trigger_prompt_change", "test_x_mcp_header",
    # tasks-* (the tasks extension)
    "greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete",
    "multi_input", "test_tool_with_task",
}


def test_tools_list_structure_and_names(either: Wire) -> None:
    tools = either.result("tools/list")["tools"]
    assert {t["name"] for t in tools} == EXPECTED_TOOLS
    for tool in tools:
        assert re.fullmatch(r"[A-Za-z0-9_./-]{1,64}", tool["name"])
        assert tool["description"], tool["name"]
        assert tool["inputSchema"]["type"] == "object"
    # http-header-validation calls the first tool with {} and needs a success.
    assert tools[0]["name"] == "test_simple_text"
    # sampling and elicitation tools take the arguments the suite sends.
    by_name = {t["name"]: t for t in tools}
    assert by_name["test_sampling"]["inputSchema"]["required"] == ["prompt"]
    assert by_name["test_elicitation"]["inputSchema"]["required"] == ["message"]


def test_json_schema_2020_12_keywords_are_preserved(either: Wire) -> None:
    tools = {t["name"]: t for t in either.result("tools/list")["tools"]}
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"]
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert schema["additionalProperties"] is False
    assert any(isinstance(item.get("anyOf"), list) for item in schema["allOf"])
    assert {"if", "then", "else"} <= set(schema)
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}


def test_json_schema_tool_validates_against_its_advertised_schema(either: Wire) -> None:
    ok = call(either, "json_schema_2020_12_tool",
              {"name": "Ada", "contactMethod": "phone", "phone": "555"})
    assert ok.get("isError") is not True and ok["content"][0]["text"] == "Contact Ada via 555"
    bad = call(either, "json_schema_2020_12_tool", {"name": "Ada", "contactMethod": "phone"})
    assert bad["isError"] is True and "phone" in bad["content"][0]["text"]


def test_x_mcp_header_tool_is_advertised(either: Wire) -> None:
    tools = {t["name"]: t for t in either.result("tools/list")["tools"]}
    region = tools["test_x_mcp_header"]["inputSchema"]["properties"]["region"]
    assert region == {"type": "string", "description": "Mirrored into Mcp-Param-Region",
                      "x-mcp-header": "Region"}
    assert call(either, "test_x_mcp_header", {"region": "Hello"})["content"][0]["text"] == (
        "region=Hello")


# -- tools-call-* content ------------------------------------------------------------------


def test_simple_text(either: Wire) -> None:
    result = either.result("tools/call", {"name": "test_simple_text"})  # no arguments at all
    assert result["content"] == [
        {"type": "text", "text": "This is a simple text response for testing."}]


def test_image_content(either: Wire) -> None:
    [block] = call(either, "test_image_content")["content"]
    assert block["type"] == "image" and block["mimeType"] == "image/png"
    assert base64.b64decode(block["data"]).startswith(b"\x89PNG\r\n\x1a\n")


def test_audio_content(either: Wire) -> None:
    [block] = call(either, "test_audio_content")["content"]
    assert block["type"] == "audio" and block["mimeType"] == "audio/wav"
    data = base64.b64decode(block["data"])
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"


def test_embedded_resource(either: Wire) -> None:
    [block] = call(either, "test_embedded_resource")["content"]
    assert block == {"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain",
        "text": "This is an embedded resource content."}}


def test_multiple_content_types(either: Wire) -> None:
    content = call(either, "test_multiple_content_types")["content"]
    assert [b["type"] for b in content] == ["text", "image", "resource"]
    assert content[0]["text"] == "Multiple content types test:"
    assert content[2]["resource"] == {"uri": "test://mixed-content-resource",
                                      "mimeType": "application/json",
                                      "text": '{"test":"data","value":123}'}


def test_error_handling(either: Wire) -> None:
    result = call(either, "test_error_handling")
    assert result["isError"] is True
    assert result["content"][0]["text"] == "This tool intentionally returns an error for testing"


def test_progress_notifications(either: Wire) -> None:
    call(either, "test_tool_with_progress", _meta={"progressToken": "progress-test-1"})
    progress = [p for p in either.notified("notifications/progress")
                if p["progressToken"] == "progress-test-1"]
    assert [(p["progress"], p["total"]) for p in progress] == [(0, 100), (50, 100), (100, 100)]


def test_progress_without_token_sends_nothing(either: Wire) -> None:
    assert call(either, "test_tool_with_progress")["content"][0]["text"]
    assert either.notified("notifications/progress") == []


def test_reconnection_tool_answers(either: Wire) -> None:
    result = call(either, "test_reconnection")
    assert result.get("isError") is not True and result["content"][0]["text"]


# -- handshake era: logging, sampling, elicitation ---------------------------------------------


def test_logging_set_level_and_tool_logs(legacy: Legacy) -> None:
    assert legacy.result("logging/setLevel", {"level": "debug"}) == {}
    call(legacy, "test_tool_with_logging")
    logs = legacy.notified("notifications/message")
    assert [(m["level"], m["data"]) for m in logs] == [
        ("info", "Tool execution started"), ("info", "Tool processing data"),
        ("info", "Tool execution completed")]


def test_ping(legacy: Legacy) -> None:
    assert legacy.result("ping") == {}


def test_initialize_declares_what_the_scenarios_use(legacy: Legacy) -> None:
    caps = legacy.capabilities
    assert {"tools", "resources", "prompts", "completions", "logging"} <= set(caps)
    assert caps["resources"]["subscribe"] is True


def test_sampling_round_trip() -> None:
    wire = Legacy({"sampling": {}}, answer=lambda method, params: sampled(
        "This is a test response from the client"))
    try:
        result = call(wire, "test_sampling", {"prompt": "Test prompt for sampling"})
    finally:
        wire.close()
    assert result["content"] == [
        {"type": "text", "text": "LLM response: This is a test response from the client"}]
    [request] = wire.server_requests
    assert request.method == "sampling/createMessage"
    assert request.params == {"messages": [{"role": "user", "content": {
        "type": "text", "text": "Test prompt for sampling"}}], "maxTokens": 100}
    validate(LEGACY, "CreateMessageRequest", request.to_wire())


def test_sampling_without_capability_is_a_tool_error(legacy: Legacy) -> None:
    result = call(legacy, "test_sampling", {"prompt": "hi"})
    assert result["isError"] is True and "sampling" in result["content"][0]["text"]


def _elicit_with(content: dict[str, Any], tool: str,
                 arguments: dict[str, Any] | None = None) -> tuple[Request, dict[str, Any]]:
    wire = Legacy({"elicitation": {}}, answer=lambda method, params: elicit_accept(content))
    try:
        result = call(wire, tool, arguments)
    finally:
        wire.close()
    [request] = wire.server_requests
    assert request.method == "elicitation/create"
    validate(LEGACY, "ElicitRequest", request.to_wire())
    return request, result


def test_elicitation_round_trip() -> None:
    request, result = _elicit_with({"username": "testuser", "email": "test@example.com"},
                                   "test_elicitation",
                                   {"message": "Please provide your information"})
    assert request.params["message"] == "Please provide your information"
    schema = request.params["requestedSchema"]
    assert schema["type"] == "object" and schema["required"] == ["username", "email"]
    assert schema["properties"]["username"]["type"] == "string"
    assert schema["properties"]["email"]["type"] == "string"
    text = result["content"][0]["text"]
    assert text.startswith("User response: action=accept")
    assert json.loads(text.split("content=", 1)[1]) == {"username": "testuser",
                                                        "email": "test@example.com"}


def test_elicitation_sep1034_defaults() -> None:
    request, result = _elicit_with({"name": "Jane Smith", "age": 25, "score": 88,
                                    "status": "inactive", "verified": False},
                                   "test_elicitation_sep1034_defaults")
    props = request.params["requestedSchema"]["properties"]
    assert (props["name"]["type"], props["name"]["default"]) == ("string", "John Doe")
    assert (props["age"]["type"], props["age"]["default"]) == ("integer", 30)
    assert (props["score"]["type"], props["score"]["default"]) == ("number", 95.5)
    assert props["status"]["type"] == "string" and props["status"]["default"] == "active"
    assert props["status"]["default"] in props["status"]["enum"]
    assert (props["verified"]["type"], props["verified"]["default"]) == ("boolean", True)
    assert result["content"][0]["text"].startswith("Elicitation completed: action=accept")


def test_elicitation_sep1330_enums() -> None:
    request, result = _elicit_with({"untitledSingle": "option1", "titledSingle": "value1",
                                    "legacyEnum": "opt1",
                                    "untitledMulti": ["option1", "option2"],
                                    "titledMulti": ["value1", "value2"]},
                                   "test_elicitation_sep1330_enums")
    props = request.params["requestedSchema"]["properties"]
    single = props["untitledSingle"]
    assert single["type"] == "string" and isinstance(single["enum"], list)
    assert "oneOf" not in single and "enumNames" not in single
    titled = props["titledSingle"]
    assert titled["type"] == "string" and "enum" not in titled
    assert all(isinstance(o["const"], str) and isinstance(o["title"], str)
               for o in titled["oneOf"])
    legacy_enum = props["legacyEnum"]
    assert len(legacy_enum["enumNames"]) == len(legacy_enum["enum"]) == 3
    multi = props["untitledMulti"]
    assert multi["type"] == "array" and multi["items"]["type"] == "string"
    assert isinstance(multi["items"]["enum"], list) and "anyOf" not in multi["items"]
    titled_multi = props["titledMulti"]
    assert titled_multi["type"] == "array" and "enum" not in titled_multi["items"]
    assert all(isinstance(o["const"], str) and isinstance(o["title"], str)
               for o in titled_multi["items"]["anyOf"])
    assert result["content"][0]["text"].startswith("Elicitation completed: action=accept")


def test_multiple_inputs_in_the_handshake_era_are_real_requests() -> None:
    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"elicitation/create": elicit_accept({"name": "Alice"}),
                "sampling/createMessage": sampled("Hello there!"),
                "roots/list": SUITE_ROOTS}[method]

    wire = Legacy({"elicitation": {}, "sampling": {}, "roots": {}}, answer=answer)
    try:
        result = call(wire, "test_input_required_result_multiple_inputs")
    finally:
        wire.close()
    assert [r.method for r in wire.server_requests] == [
        "elicitation/create", "sampling/createMessage", "roots/list"]
    assert result["content"][0]["text"] == (
        "name=Alice; greeting=Hello there!; roots=file:///test/root")


def test_trigger_tool_and_prompt_change_announce_list_changes(legacy: Legacy) -> None:
    before = [t["name"] for t in legacy.result("tools/list")["tools"]]
    call(legacy, "test_trigger_tool_change")
    call(legacy, "test_trigger_prompt_change")
    legacy.request("ping")  # the list_changed notifications are queued before this answer
    assert len(legacy.notified("notifications/tools/list_changed")) == 2
    assert len(legacy.notified("notifications/prompts/list_changed")) == 2
    assert [t["name"] for t in legacy.result("tools/list")["tools"]] == before


# -- resources ------------------------------------------------------------------------------


def test_resources_list(either: Wire) -> None:
    resources = either.result("resources/list")["resources"]
    assert [r["uri"] for r in resources] == [
        "test://static-text", "test://static-binary", "test://watched-resource"]
    assert all(r["name"] and r["description"] for r in resources)
    templates = either.result("resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["test://template/{id}/data"]


def test_read_static_text(either: Wire) -> None:
    assert either.result("resources/read", {"uri": "test://static-text"})["contents"] == [
        {"uri": "test://static-text", "mimeType": "text/plain",
         "text": "This is the content of the static text resource."}]


def test_read_static_binary(either: Wire) -> None:
    [item] = either.result("resources/read", {"uri": "test://static-binary"})["contents"]
    assert item["uri"] == "test://static-binary" and item["mimeType"] == "image/png"
    assert base64.b64decode(item["blob"]).startswith(b"\x89PNG")


def test_read_template(either: Wire) -> None:
    [item] = either.result("resources/read", {"uri": "test://template/123/data"})["contents"]
    assert item["uri"] == "test://template/123/data"
    assert item["mimeType"] == "application/json"
    assert json.loads(item["text"]) == {"id": "123", "templateTest": True,
                                        "data": "Data for ID: 123"}


def test_subscribe_and_unsubscribe(legacy: Legacy) -> None:
    assert legacy.result("resources/subscribe", {"uri": "test://watched-resource"}) == {}
    server.notify_resource_updated("test://watched-resource")
    legacy.request("ping")
    assert legacy.notified("notifications/resources/updated") == [
        {"uri": "test://watched-resource"}]
    assert legacy.result("resources/unsubscribe", {"uri": "test://watched-resource"}) == {}
    server.notify_resource_updated("test://watched-resource")
    legacy.request("ping")
    assert len(legacy.notified("notifications/resources/updated")) == 1


@pytest.mark.parametrize(("wire_class", "code"), [(Legacy, -32002), (Modern, -32602)])
def test_unknown_resource_is_an_error_naming_the_uri(wire_class: type[Wire], code: int
                                                     ) -> None:
    uri = "test://nonexistent-resource-for-conformance-testing"
    wire = wire_class()
    try:
        error = wire.error("resources/read", {"uri": uri})
    finally:
        wire.close()
    assert error["code"] == code and error["data"]["uri"] == uri


# -- prompts and completion --------------------------------------------------------------------


def test_prompts_list(either: Wire) -> None:
    prompts = {p["name"]: p for p in either.result("prompts/list")["prompts"]}
    assert set(prompts) == {"test_simple_prompt", "test_prompt_with_arguments",
                            "test_prompt_with_embedded_resource", "test_prompt_with_image",
                            "test_input_required_result_prompt"}
    assert all(p["description"] for p in prompts.values())
    assert [(a["name"], a["required"]) for a in prompts["test_prompt_with_arguments"][
        "arguments"]] == [("arg1", True), ("arg2", True)]
    assert [a["name"] for a in prompts["test_prompt_with_embedded_resource"]["arguments"]] == [
        "resourceUri"]


def test_prompt_simple(either: Wire) -> None:
    messages = either.result("prompts/get", {"name": "test_simple_prompt"})["messages"]
    assert messages == [{"role": "user", "content": {
        "type": "text", "text": "This is a simple prompt for testing."}}]


def test_prompt_with_arguments(either: Wire) -> None:
    messages = either.result("prompts/get", {"name": "test_prompt_with_arguments", "arguments": {
        "arg1": "testValue1", "arg2": "testValue2"}})["messages"]
    assert messages[0]["content"]["text"] == (
        "Prompt with arguments: arg1='testValue1', arg2='testValue2'")


def test_prompt_with_embedded_resource(either: Wire) -> None:
    messages = either.result("prompts/get", {
        "name": "test_prompt_with_embedded_resource",
        "arguments": {"resourceUri": "test://example-resource"}})["messages"]
    assert messages == [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "test://example-resource", "mimeType": "text/plain",
            "text": "Embedded resource content for testing."}}},
        {"role": "user", "content": {"type": "text",
                                     "text": "Please process the embedded resource above."}}]


def test_prompt_with_image(either: Wire) -> None:
    messages = either.result("prompts/get", {"name": "test_prompt_with_image"})["messages"]
    image = messages[0]["content"]
    assert image["type"] == "image" and image["mimeType"] == "image/png" and image["data"]
    assert messages[1]["content"] == {"type": "text", "text": "Please analyze the image above."}


def test_completion(either: Wire) -> None:
    result = either.result("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "test"}})
    assert result["completion"]["values"] == ["test", "testValue1", "testing"]
    template = either.result("completion/complete", {
        "ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
        "argument": {"name": "id", "value": "1"}})
    assert template["completion"]["values"] == ["1", "123"]


# -- 2026-07-28: input-required-result-* (SEP-2322) ------------------------------------------


def _input_required(result: dict[str, Any]) -> dict[str, Any]:
    assert result["resultType"] == "input_required", result
    assert isinstance(result["requestState"], str) and result["requestState"]
    validate(MODERN, "InputRequiredResult", result)
    return result["inputRequests"]


def _retry(wire: Modern, first: dict[str, Any], responses: dict[str, Any],
           name: str = "test_input_required_result_elicitation") -> dict[str, Any]:
    return call(wire, name, inputResponses=responses, requestState=first["requestState"])


def test_basic_elicitation(modern: Modern) -> None:
    first = call(modern, "test_input_required_result_elicitation")
    requests = _input_required(first)
    assert requests == {"user_name": {"method": "elicitation/create", "params": {
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                            "required": ["name"]}}}}
    done = _retry(modern, first, {"user_name": elicit_accept({"name": "Alice"})})
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Hello, Alice!"}]
    assert modern.server_requests == []  # never a server-to-client request in this era


def test_basic_sampling(modern: Modern) -> None:
    name = "test_input_required_result_sampling"
    first = call(modern, name)
    [(key, request)] = _input_required(first).items()
    assert request == {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {
            "type": "text", "text": "What is the capital of France?"}}], "maxTokens": 100}}
    done = _retry(modern, first, {key: sampled("The capital of France is Paris.")}, name)
    assert done["resultType"] == "complete"
    assert "Paris" in done["content"][0]["text"]


def test_basic_list_roots(modern: Modern) -> None:
    name = "test_input_required_result_list_roots"
    first = call(modern, name)
    [(key, request)] = _input_required(first).items()
    assert request["method"] == "roots/list"
    done = _retry(modern, first, {key: SUITE_ROOTS}, name)
    assert done["resultType"] == "complete"
    assert "file:///test/root" in done["content"][0]["text"]


def test_request_state_round_trip(modern: Modern) -> None:
    name = "test_input_required_result_request_state"
    first = call(modern, name)
    [(key, request)] = _input_required(first).items()
    assert request["params"]["message"] == "Please confirm"
    assert request["params"]["requestedSchema"]["properties"] == {"ok": {"type": "boolean"}}
    done = _retry(modern, first, {key: elicit_accept({"ok": True})}, name)
    assert done["resultType"] == "complete" and "state-ok" in done["content"][0]["text"]


def test_multiple_input_requests_in_one_round(modern: Modern) -> None:
    name = "test_input_required_result_multiple_inputs"
    first = call(modern, name)
    requests = _input_required(first)
    assert {k: r["method"] for k, r in requests.items()} == {
        "user_name": "elicitation/create", "greeting": "sampling/createMessage",
        "client_roots": "roots/list"}
    assert requests["greeting"]["params"]["maxTokens"] == 50
    done = _retry(modern, first, {"user_name": elicit_accept({"name": "Alice"}),
                                  "greeting": sampled("Hello there!"),
                                  "client_roots": SUITE_ROOTS}, name)
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == (
        "name=Alice; greeting=Hello there!; roots=file:///test/root")


def test_multiple_inputs_partial_answers_ask_only_for_the_rest(modern: Modern) -> None:
    name = "test_input_required_result_multiple_inputs"
    first = call(modern, name)
    second = _retry(modern, first, {"greeting": sampled("Hi")}, name)
    assert set(_input_required(second)) == {"user_name", "client_roots"}
    done = _retry(modern, second, {"user_name": elicit_accept({"name": "Bo"}),
                                   "client_roots": SUITE_ROOTS}, name)
    assert done["content"][0]["text"] == "name=Bo; greeting=Hi; roots=file:///test/root"


def test_multi_round(modern: Modern) -> None:
    name = "test_input_required_result_multi_round"
    first = call(modern, name)
    [(key1, step1)] = _input_required(first).items()
    assert step1["params"]["message"] == "Step 1: What is your name?"
    second = _retry(modern, first, {key1: elicit_accept({"name": "Alice"})}, name)
    [(key2, step2)] = _input_required(second).items()
    assert step2["params"]["message"] == "Step 2: What is your favorite color?"
    assert second["requestState"] != first["requestState"]
    done = _retry(modern, second, {key2: elicit_accept({"color": "blue"})}, name)
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "Alice likes blue"


def test_missing_input_response_is_asked_again(modern: Modern) -> None:
    result = call(modern, "test_input_required_result_elicitation",
                  inputResponses={"wrong_key": elicit_accept({"data": "wrong"})})
    assert set(_input_required(result)) == {"user_name"}


def test_non_tool_request(modern: Modern) -> None:
    first = modern.result("prompts/get", {"name": "test_input_required_result_prompt"})
    [(key, request)] = _input_required(first).items()
    assert request["params"]["message"] == "What context should the prompt use?"
    done = modern.result("prompts/get", {
        "name": "test_input_required_result_prompt",
        "inputResponses": {key: elicit_accept({"context": "test context"})},
        "requestState": first["requestState"]})
    assert done["resultType"] == "complete"
    assert done["messages"][0]["content"]["text"] == "Answer using this context: test context"


def test_no_input_required_on_list_methods(modern: Modern) -> None:
    for method in ("tools/list", "prompts/list"):
        assert modern.result(method)["resultType"] == "complete"


def test_tampered_state_is_rejected(modern: Modern) -> None:
    name = "test_input_required_result_tampered_state"
    first = call(modern, name)
    [key] = _input_required(first)
    error = modern.error("tools/call", {
        "name": name, "arguments": {}, "inputResponses": {key: elicit_accept({"ok": True})},
        "requestState": first["requestState"] + "-TAMPERED"})
    assert error["code"] == -32602


def test_state_of_another_tool_is_rejected(modern: Modern) -> None:
    first = call(modern, "test_input_required_result_request_state")
    error = modern.error("tools/call", {
        "name": "test_input_required_result_tampered_state", "arguments": {},
        "requestState": first["requestState"]})
    assert error["code"] == -32602


def test_capability_check_asks_only_for_declared_capabilities() -> None:
    wire = Modern({"sampling": {}})
    try:
        first = call(wire, "test_input_required_result_capabilities")
        methods = [r["method"] for r in _input_required(first).values()]
        assert methods == ["sampling/createMessage"]
        [key] = first["inputRequests"]
        done = _retry(wire, first, {key: sampled("hello")},
                      "test_input_required_result_capabilities")
        assert done["content"][0]["text"] == "model=hello"
    finally:
        wire.close()


def test_named_questions_need_the_capability() -> None:
    wire = Modern({"sampling": {}})
    try:
        error = wire.error("tools/call", {"name": "test_input_required_result_elicitation",
                                          "arguments": {}})
    finally:
        wire.close()
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_extra_input_responses_are_ignored(modern: Modern) -> None:
    extras = {"unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
              "another_unexpected": {"action": "accept", "content": {"baz": 123}}}
    # As the suite's -ignore-extra-params sends it: answers on the first call, with no
    # requestState. No question was asked yet, so none is answered (issue #11): the suite
    # reports this as a WARNING, not a failure.
    first = call(modern, "test_input_required_result_elicitation", inputResponses={
        "user_name": elicit_accept({"name": "Alice"}), **extras})
    assert set(_input_required(first)) == {"user_name"}
    # Answered on the retry, the extra keys are ignored.
    result = _retry(modern, first, {"user_name": elicit_accept({"name": "Alice"}), **extras})
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"] == "Hello, Alice!"


@pytest.mark.parametrize("responses", [{"user_name": 12345}, None,
                                       {"user_name": {"content": {"name": "no action"}}}])
def test_invalid_input_responses_never_complete(modern: Modern, responses: Any) -> None:
    reply = modern.request("tools/call", {"name": "test_input_required_result_elicitation",
                                          "arguments": {}, "inputResponses": responses})
    if isinstance(reply, Response):
        assert set(_input_required(reply.result)) == {"user_name"}
    else:
        assert reply.error["code"] == -32602


# -- 2026-07-28: caching, server-stateless -----------------------------------------------------


def test_caching_hints_on_cacheable_results(modern: Modern) -> None:
    listed = modern.result("resources/list")
    first_uri = listed["resources"][0]["uri"]
    assert first_uri == "test://static-text"
    for result in (modern.result("tools/list"), modern.result("prompts/list"), listed,
                   modern.result("resources/templates/list"),
                   modern.result("resources/read", {"uri": first_uri})):
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
        assert result["cacheScope"] in ("public", "private")


def test_missing_capability_is_minus_32021() -> None:
    wire = Modern({})
    try:
        error = wire.error("tools/call", {"name": "test_missing_capability", "arguments": {}})
    finally:
        wire.close()
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"sampling": {}}


def test_no_log_messages_without_a_log_level() -> None:
    wire = Modern({})
    try:
        assert call(wire, "test_logging_tool")["resultType"] == "complete"
        assert wire.notified("notifications/message") == []
        call(wire, "test_logging_tool",
             _meta={"io.modelcontextprotocol/logLevel": "warning"})
        assert [m["level"] for m in wire.notified("notifications/message")] == [
            "warning", "error"]
    finally:
        wire.close()


def test_streaming_elicitation_is_an_input_required_result() -> None:
    wire = Modern({"elicitation": {}})
    try:
        result = call(wire, "test_streaming_elicitation")
    finally:
        wire.close()
    [request] = _input_required(result).values()
    assert request["method"] == "elicitation/create"
    assert wire.server_requests == []


def test_trigger_tools_keep_the_lists_stable(modern: Modern) -> None:
    tools = modern.result("tools/list")["tools"]
    prompts = modern.result("prompts/list")["prompts"]
    assert call(modern, "test_trigger_tool_change")["resultType"] == "complete"
    assert call(modern, "test_trigger_prompt_change")["resultType"] == "complete"
    assert modern.result("tools/list")["tools"] == tools
    assert modern.result("prompts/list")["prompts"] == prompts


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe",
                                    "unknown/method"])
def test_removed_methods_are_not_found(modern: Modern, method: str) -> None:
    assert modern.error(method)["code"] == -32601
