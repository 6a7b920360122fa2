"""A server's tools for OpenAI's models, through the ``openai`` SDK (the ``openai``
extra): the Chat Completions API, and the Responses API.

::

    import openai
    from mcpsync import Client
    from mcpsync.llm import openai as openai_tools

    model = openai.OpenAI()
    with Client.from_config("mcp.json") as hub:
        tools = openai_tools.tool_params(hub.list_tools())
        messages = [{"role": "user", "content": "What is 2 + 3?"}]
        completion = model.chat.completions.create(model=MODEL, tools=tools,
                                                   messages=messages)
        while completion.choices[0].finish_reason == "tool_calls":
            messages.append(completion.choices[0].message)
            messages += openai_tools.run_tool_calls(hub, completion)
            completion = model.chat.completions.create(...)

Nothing here imports the SDK: a response is read by its fields, so the SDK's objects and
plain dicts both work, and the messages returned are plain dicts the SDK accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.ui_meta import model_visible
from ..types import CreateMessageRequestParams, CreateMessageResult, ImageContent, TextContent, Tool
from .calls import (
    DEFAULT_MAX_PARALLEL,
    ToolCall,
    ToolCaller,
    arguments_of,
    block_text,
    field,
    result_text,
    run_calls,
)

#: What the API accepts as a function's name.
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: ``finish_reason`` as the spec's ``stopReason``.
_STOP = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}
APIS = ("chat", "responses")


def tool_params(tools: Iterable[Tool], *, api: str = "chat") -> list[dict[str, Any]]:
    """The tools as function tools: for Chat Completions (``api="chat"``: ``{"type":
    "function", "function": {...}}``) or the Responses API (``api="responses"``: the same
    fields flat). A name the API would refuse is a ``ValueError`` naming it. A tool for an
    MCP Apps view alone (``_meta.ui.visibility`` without ``"model"``) is left out: the
    revision forbids offering it to the model."""
    if api not in APIS:
        raise ValueError(f"api {api!r} is not one of {APIS}")
    params = []
    for tool in filter(model_visible, tools):
        if not _NAME.fullmatch(tool.name):
            raise ValueError(f"the tool name {tool.name!r} is not one the API takes "
                             f"(letters, digits, '_' and '-', at most 64)")
        function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
        description = tool.description or tool.title
        if description:
            function["description"] = description
        params.append({"type": "function", "function": function} if api == "chat"
                      else {"type": "function", **function})
    return params


def tool_calls(response: Any) -> tuple[list[ToolCall], str]:
    """The function calls a response asked for, and which API's shape it was: a
    ``ChatCompletion`` (its first choice), a chat message, or a Responses API
    ``Response`` (its ``function_call`` output items)."""
    output = field(response, "output")
    if isinstance(output, list):
        calls = [_call(field(item, "call_id"), field(item, "name"), field(item, "arguments"))
                 for item in output if field(item, "type") == "function_call"]
        return calls, "responses"
    choices = field(response, "choices")
    message = field(choices[0], "message") if choices else response
    calls = []
    for item in field(message, "tool_calls") or []:
        function = field(item, "function")
        calls.append(_call(field(item, "id"), field(function, "name"),
                           field(function, "arguments")))
    return calls, "chat"


def _call(call_id: Any, name: Any, raw: Any) -> ToolCall:
    arguments, invalid = arguments_of(raw, str(name))
    return ToolCall(str(call_id or ""), str(name or ""), arguments, invalid)


def run_tool_calls(client: ToolCaller, response: Any, *, timeout: float | None = None,
                   max_parallel: int = DEFAULT_MAX_PARALLEL) -> list[dict[str, Any]]:
    """Run a response's function calls through ``client`` (a ``Client`` or a hub), at
    once, each by ``timeout`` (default: the client's); the messages that answer them, in
    the same order: ``{"role": "tool", ...}`` for Chat Completions,
    ``{"type": "function_call_output", ...}`` items for the Responses API. Empty when
    the response asked for none. A failed call is answered with why, as text."""
    calls, api = tool_calls(response)
    outcomes = run_calls(client, calls, timeout=timeout, max_parallel=max_parallel)
    if api == "responses":
        return [{"type": "function_call_output", "call_id": o.call.id,
                 "output": result_text(o)} for o in outcomes]
    return [{"role": "tool", "tool_call_id": o.call.id, "content": result_text(o)}
            for o in outcomes]


def sampling_handler(client: Any, *, model: str, timeout: float = 120.0
                     ) -> Callable[[CreateMessageRequestParams], CreateMessageResult]:
    """A ``HostHandlers(sampling=...)`` handler that answers a server's
    ``sampling/createMessage`` with ``client.chat.completions.create`` (``client`` an
    ``openai.OpenAI``): the system prompt first, the server's messages (images as data
    URLs), ``max_tokens``, temperature, stop sequences; ``model`` is the model to ask.
    ``timeout`` bounds the API call."""

    def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        messages: list[dict[str, Any]] = []
        if params.system_prompt:
            messages.append({"role": "system", "content": params.system_prompt})
        messages.extend({"role": m.role, "content": _message_content(m.content)}
                        for m in params.messages)
        request: dict[str, Any] = {"model": model, "messages": messages,
                                   "max_completion_tokens": params.max_tokens,
                                   "timeout": timeout}
        if params.temperature is not None:
            request["temperature"] = params.temperature
        if params.stop_sequences:
            request["stop"] = list(params.stop_sequences)
        completion = client.chat.completions.create(**request)
        choice = field(completion, "choices")[0]
        reason = field(choice, "finish_reason")
        return CreateMessageResult(
            "assistant", TextContent(str(field(field(choice, "message"), "content") or "")),
            model=str(field(completion, "model", model)), stop_reason=_STOP.get(reason, reason))

    return sample


def _message_content(content: Any) -> str | list[dict[str, Any]]:
    blocks = content if isinstance(content, list) else [content]
    if all(not isinstance(b, ImageContent) for b in blocks):
        return "\n".join(block_text(b) for b in blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ImageContent):
            parts.append({"type": "image_url", "image_url": {
                "url": f"data:{block.mime_type};base64,{block.data}"}})
        else:
            parts.append({"type": "text", "text": block_text(block)})
    return parts


__all__ = ["APIS", "run_tool_calls", "sampling_handler", "tool_calls", "tool_params"]
