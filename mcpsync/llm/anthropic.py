"""A server's tools for Claude, through the ``anthropic`` SDK (the ``anthropic`` extra).

::

    import anthropic
    from mcpsync import Client
    from mcpsync.llm import anthropic as claude_tools

    model = anthropic.Anthropic()
    with Client.from_config("mcp.json") as hub:
        tools = claude_tools.tool_params(hub.list_tools())
        messages = [{"role": "user", "content": "What is 2 + 3?"}]
        response = model.messages.create(model=MODEL, max_tokens=1024, tools=tools,
                                         messages=messages)
        while response.stop_reason == "tool_use":
            messages += [{"role": "assistant", "content": response.content},
                         claude_tools.run_tool_uses(hub, response)]
            response = model.messages.create(...)

Nothing here imports the SDK: a response is read by its fields (``content``, each
block's ``type``, ``id``, ``name``, ``input``), so the SDK's objects and plain dicts both
work, and the messages returned are plain dicts the SDK accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.ui_meta import model_visible
from ..types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    TextContent,
    Tool,
)
from .calls import (
    DEFAULT_MAX_PARALLEL,
    ToolCall,
    ToolCaller,
    ToolOutcome,
    arguments_of,
    block_text,
    field,
    result_text,
    run_calls,
)

#: What the Messages API accepts as a tool's name.
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: Claude's stop reasons as the spec's ``stopReason``.
_STOP = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence",
         "tool_use": "toolUse"}


def tool_params(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The tools as the Messages API's ``tools`` (name, description, input schema).

    A name the API would refuse (``calc.add``: only letters, digits, ``_`` and ``-``, at
    most 64) is a ``ValueError`` naming it, here rather than as a 400 from the API. A tool
    for an MCP Apps view alone (``_meta.ui.visibility`` without ``"model"``) is left out:
    the revision forbids offering it to the model."""
    params = []
    for tool in filter(model_visible, tools):
        if not _NAME.fullmatch(tool.name):
            raise ValueError(f"the tool name {tool.name!r} is not one the Messages API takes "
                             f"(letters, digits, '_' and '-', at most 64)")
        param: dict[str, Any] = {"name": tool.name, "input_schema": tool.input_schema}
        description = tool.description or tool.title
        if description:
            param["description"] = description
        params.append(param)
    return params


def tool_uses(response: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a response (a ``Message``, or its ``content`` list)."""
    blocks = response if isinstance(response, list) else field(response, "content", [])
    calls = []
    for block in blocks or []:
        if field(block, "type") != "tool_use":
            continue
        name = str(field(block, "name", ""))
        arguments, invalid = arguments_of(field(block, "input"), name)
        calls.append(ToolCall(str(field(block, "id", "")), name, arguments, invalid))
    return calls


def run_tool_uses(client: ToolCaller, response: Any, *, timeout: float | None = None,
                  max_parallel: int = DEFAULT_MAX_PARALLEL) -> dict[str, Any] | None:
    """Run a response's ``tool_use`` blocks through ``client`` (a ``Client`` or a hub), at
    once, each by ``timeout`` (default: the client's); the ``user`` message of their
    ``tool_result`` blocks to send next, in the same order. None when the response asked
    for no tool. A call that failed is a result with ``is_error`` (the model reads why)."""
    calls = tool_uses(response)
    if not calls:
        return None
    outcomes = run_calls(client, calls, timeout=timeout, max_parallel=max_parallel)
    return {"role": "user", "content": [tool_result(outcome) for outcome in outcomes]}


def tool_result(outcome: ToolOutcome) -> dict[str, Any]:
    """One ``tool_result`` block: text blocks and images as the API takes them, other
    content described as text."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": outcome.call.id}
    result = outcome.result
    if outcome.error is not None or result is None:
        block["content"] = [{"type": "text", "text": result_text(outcome)}]
    else:
        block["content"] = _content(result)
    if outcome.is_error:
        block["is_error"] = True
    return block


def _content(result: CallToolResult) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for item in result.content:
        if isinstance(item, ImageContent):
            content.append({"type": "image", "source": {
                "type": "base64", "media_type": item.mime_type, "data": item.data}})
        else:
            text = block_text(item)
            if text:
                content.append({"type": "text", "text": text})
    if not content:
        text = result_text(ToolOutcome(ToolCall("", "", {}), result, None))
        content.append({"type": "text", "text": text or "(no content)"})
    return content


def sampling_handler(client: Any, *, model: str, timeout: float = 120.0
                     ) -> Callable[[CreateMessageRequestParams], CreateMessageResult]:
    """A ``HostHandlers(sampling=...)`` handler that answers a server's
    ``sampling/createMessage`` with ``client.messages.create`` (``client`` an
    ``anthropic.Anthropic``): the server's messages, system prompt, ``max_tokens`` and
    stop sequences, and its temperature when the SDK still takes one; ``model`` is the
    model to ask (a server's model preferences are hints the application decides on).
    ``timeout`` bounds the API call."""

    def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        request: dict[str, Any] = {
            "model": model, "max_tokens": params.max_tokens, "timeout": timeout,
            "messages": [{"role": m.role, "content": _message_content(m.content)}
                         for m in params.messages]}
        if params.system_prompt:
            request["system"] = params.system_prompt
        if params.temperature is not None and _takes(client.messages.create, "temperature"):
            request["temperature"] = params.temperature
        if params.stop_sequences:
            request["stop_sequences"] = list(params.stop_sequences)
        response = client.messages.create(**request)
        text = "".join(str(field(b, "text", "")) for b in field(response, "content", [])
                       if field(b, "type") == "text")
        reason = field(response, "stop_reason")
        return CreateMessageResult("assistant", TextContent(text),
                                   model=str(field(response, "model", model)),
                                   stop_reason=_STOP.get(reason, reason))

    return sample


def _takes(method: Any, name: str) -> bool:
    """Whether the SDK's method has the parameter ``name``: recent releases of the SDK
    dropped ``temperature`` (the models it serves choose their own), and a keyword it
    does not know is a ``TypeError`` before anything is sent."""
    import inspect

    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return True


def _message_content(content: Any) -> list[dict[str, Any]]:
    blocks = content if isinstance(content, list) else [content]
    converted: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ImageContent):
            converted.append({"type": "image", "source": {
                "type": "base64", "media_type": block.mime_type, "data": block.data}})
        else:
            converted.append({"type": "text", "text": block_text(block)})
    return converted


__all__ = ["run_tool_uses", "sampling_handler", "tool_params", "tool_result", "tool_uses"]
