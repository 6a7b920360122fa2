"""The model helpers with the real ``anthropic`` and ``openai`` SDKs, their ``base_url``
pointed at a local stand-in of the API (``tests/llm/standin.py``): the tools as the SDK's
tool definitions (the stand-in refuses a malformed one), a response's tool calls run
through a client in parallel threads (a barrier that only two concurrent calls pass),
each by its deadline, answered with the messages the API takes back; and a server's
sampling request answered by the SDK's client."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, HostHandlers, Image, Server
from mcpsync.llm import anthropic as claude_tools
from mcpsync.llm import openai as openai_tools
from tests.helpers import require_module
from tests.llm.standin import ModelApi, chat_completion, claude_message, response
from tests.serving import RunningServer

anthropic = require_module("anthropic")
openai = require_module("openai")

PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00"
       b"\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05"
       b"\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


def build_server(meeting: threading.Barrier) -> Server:
    server = Server("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def meet(who: str) -> str:
        """Returns once another call of meet runs at the same time."""
        meeting.wait()
        return f"{who} met"

    @server.tool()
    def slow(ctx: HandlerContext, seconds: float) -> str:
        """Waits, or until cancelled."""
        ctx.sleep(seconds)
        return "slept"

    @server.tool()
    def picture() -> Image:
        """A one-pixel PNG."""
        return Image(PNG)

    @server.tool()
    def ask(ctx: HandlerContext, question: str) -> str:
        """Asks the client's model."""
        return ctx.sample(question, max_tokens=50, system_prompt="Be brief.",
                          temperature=0.2).text

    return server


@pytest.fixture
def api() -> Iterator[tuple[ModelApi, str]]:
    app = ModelApi()
    with RunningServer(app) as running:
        yield app, running.base


@pytest.fixture
def client() -> Iterator[Client]:
    with Client.memory(build_server(threading.Barrier(2, timeout=10)), timeout=30) as c:
        yield c


def test_claude_calls_tools_in_parallel_and_gets_their_results(api, client) -> None:
    app, base = api
    model = anthropic.Anthropic(base_url=base, api_key="test-key", max_retries=0)
    tools = claude_tools.tool_params(client.list_tools())
    assert tools[0] == {"name": "add", "description": "Add two numbers.", "input_schema": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]}}
    app.script("/v1/messages", lambda body: claude_message([
        {"type": "text", "text": "Let me compute."},
        {"type": "tool_use", "id": "toolu_1", "name": "meet", "input": {"who": "ann"}},
        {"type": "tool_use", "id": "toolu_2", "name": "meet", "input": {"who": "bob"}},
        {"type": "tool_use", "id": "toolu_3", "name": "add", "input": {"a": 2, "b": 3}},
        {"type": "tool_use", "id": "toolu_4", "name": "nothing", "input": {}},
        {"type": "tool_use", "id": "toolu_5", "name": "picture", "input": {}},
    ], "tool_use"), lambda body: claude_message([{"type": "text", "text": "2 + 3 = 5"}],
                                                "end_turn"))
    messages: list[Any] = [{"role": "user", "content": "Add 2 and 3."}]
    first = model.messages.create(model="claude-test", max_tokens=512, tools=tools,
                                  messages=messages)
    assert first.stop_reason == "tool_use"
    answer = claude_tools.run_tool_uses(client, first)
    assert answer is not None and answer["role"] == "user"
    results = answer["content"]
    assert [r["tool_use_id"] for r in results] == [f"toolu_{i}" for i in range(1, 6)]
    assert results[0]["content"] == [{"type": "text", "text": "ann met"}]
    assert results[1]["content"] == [{"type": "text", "text": "bob met"}]
    assert results[2]["content"] == [{"type": "text", "text": "5"}]
    assert results[3]["is_error"] is True and "Unknown tool: nothing" in \
        results[3]["content"][0]["text"]
    assert results[4]["content"][0]["type"] == "image"
    assert results[4]["content"][0]["source"]["media_type"] == "image/png"
    messages += [{"role": "assistant", "content": first.content}, answer]
    final = model.messages.create(model="claude-test", max_tokens=512, tools=tools,
                                  messages=messages)
    assert final.content[0].text == "2 + 3 = 5"
    sent = app.seen[-1][1]["messages"][-1]["content"]
    assert [block["type"] for block in sent] == ["tool_result"] * 5
    assert claude_tools.run_tool_uses(client, final) is None


def test_each_call_keeps_its_deadline(client) -> None:
    began = time.monotonic()
    answer = claude_tools.run_tool_uses(client, [
        {"type": "tool_use", "id": "a", "name": "slow", "input": {"seconds": 60}},
        {"type": "tool_use", "id": "b", "name": "add", "input": {"a": 1, "b": 1}}],
        timeout=0.5)
    assert time.monotonic() - began < 20
    assert answer is not None
    slow, add = answer["content"]
    assert slow["is_error"] is True and "RequestTimeoutError" in slow["content"][0]["text"]
    assert "is_error" not in add
    assert not [t for t in threading.enumerate() if t.name.startswith("mcpsync-llm")]


def test_a_name_the_api_refuses_is_caught_here() -> None:
    from mcpsync import Tool

    with pytest.raises(ValueError, match=r"'calc\.add' is not one the Messages API takes"):
        claude_tools.tool_params([Tool(name="calc.add")])
    with pytest.raises(ValueError, match=r"'calc\.add' is not one the API takes"):
        openai_tools.tool_params([Tool(name="calc.add")])


def test_openai_chat_completions(api, client) -> None:
    app, base = api
    model = openai.OpenAI(base_url=base + "/v1", api_key="test-key", max_retries=0)
    tools = openai_tools.tool_params(client.list_tools())
    assert tools[0]["type"] == "function" and tools[0]["function"]["name"] == "add"
    app.script("/v1/chat/completions", lambda body: chat_completion({
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "meet", "arguments": '{"who": "ann"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "meet", "arguments": '{"who": "bob"}'}},
            {"id": "call_3", "type": "function",
             "function": {"name": "add", "arguments": "{not json"}}]}, "tool_calls"),
        lambda body: chat_completion({"role": "assistant", "content": "done"}, "stop"))
    messages: list[Any] = [{"role": "user", "content": "meet"}]
    first = model.chat.completions.create(model="gpt-test", messages=messages, tools=tools)
    answers = openai_tools.run_tool_calls(client, first)
    assert answers[:2] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "ann met"},
        {"role": "tool", "tool_call_id": "call_2", "content": "bob met"}]
    assert answers[2]["tool_call_id"] == "call_3"
    assert "are not JSON" in answers[2]["content"]
    messages += [first.choices[0].message.model_dump(exclude_none=True), *answers]
    final = model.chat.completions.create(model="gpt-test", messages=messages, tools=tools)
    assert final.choices[0].message.content == "done"
    assert openai_tools.run_tool_calls(client, final) == []


def test_openai_responses_api(api, client) -> None:
    app, base = api
    model = openai.OpenAI(base_url=base + "/v1", api_key="test-key", max_retries=0)
    tools = openai_tools.tool_params(client.list_tools(), api="responses")
    assert tools[0]["type"] == "function" and tools[0]["name"] == "add"
    app.script("/v1/responses", lambda body: response([
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "add",
         "arguments": '{"a": 40, "b": 2}', "status": "completed"}]))
    first = model.responses.create(model="gpt-test", input="add", tools=tools)
    answers = openai_tools.run_tool_calls(client, first)
    assert answers == [{"type": "function_call_output", "call_id": "call_9",
                        "output": "42"}]


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_server_samples_through_the_sdk(api, sdk: str) -> None:
    app, base = api
    if sdk == "anthropic":
        handler = claude_tools.sampling_handler(
            anthropic.Anthropic(base_url=base, api_key="k", max_retries=0),
            model="claude-test")
        app.script("/v1/messages", lambda body: claude_message(
            [{"type": "text", "text": "Paris."}], "end_turn", model=body["model"]))
    else:
        handler = openai_tools.sampling_handler(
            openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0),
            model="gpt-test")
        app.script("/v1/chat/completions", lambda body: chat_completion(
            {"role": "assistant", "content": "Paris."}, "stop", model=body["model"]))
    server = build_server(threading.Barrier(2, timeout=10))
    with Client.memory(server, timeout=30, host=HostHandlers(sampling=handler)) as client:
        result = client.call_tool("ask", {"question": "Capital of France?"})
    assert result.text == "Paris." and not result.is_error
    path, body, headers = app.seen[-1]
    if sdk == "anthropic":
        assert path == "/v1/messages" and body["system"] == "Be brief."
        assert body["messages"] == [{"role": "user", "content": [
            {"type": "text", "text": "Capital of France?"}]}]
        assert body["max_tokens"] == 50
        create = anthropic.resources.Messages.create
        takes = "temperature" in inspect.signature(create).parameters
        assert body.get("temperature") == (0.2 if takes else None)
        lower = {k.lower(): v for k, v in headers.items()}
        assert "k" in (lower.get("x-api-key"), lower.get("authorization", "")[7:])
        assert "anthropic-version" in lower  # what the real SDK sends
    else:
        assert path == "/v1/chat/completions"
        assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "Capital of France?"}]
        assert body["max_completion_tokens"] == 50 and body["temperature"] == 0.2
        assert headers["Authorization"] == "Bearer k"
