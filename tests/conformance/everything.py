"""Every fixture the MCP conformance suite (0.2.0-alpha.11) calls in server mode.

One ``server`` serves both ``--requirements 2025-11-25`` and ``--requirements 2026-07-28``:
the names, arguments and result values are the ones the suite's scenarios check. Tools that
ask the client (elicitation, sampling, roots) use the blocking ``ctx.elicit`` /
``ctx.sample`` / ``ctx.list_roots`` calls, which become real server-to-client requests in
the handshake era and ``InputRequiredResult`` rounds in 2026-07-28.

Two scenarios need input requests under names the suite picks (``user_name``, ...) or
several questions in one round; mcpsync numbers its questions ``q0``, ``q1`` ... and asks
one per round, so :func:`ask_all` below does those by hand (see NOTES.md). What the
suite checks at the HTTP level (SSE resumption, header validation, Host/Origin checks) is
not here either: NOTES.md lists it for the HTTP transport.

Run ``python -m tests.conformance.everything`` to serve it on stdio.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema

from mcpsync import (
    AudioContent,
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    EmbeddedResource,
    HandlerContext,
    ImageContent,
    MCPError,
    PromptMessage,
    Root,
    Server,
    TextContent,
    TextResourceContents,
)
from mcpsync.codec import from_wire
from mcpsync.dispatch.questions import InputRequired
from mcpsync.errors import MISSING_CLIENT_CAPABILITY
from mcpsync.protocol.versions import features
from mcpsync.server.stateless import verified_answers
from mcpsync.tasks import RunAsTask

server = Server(
    "mcpsync-conformance",
    "1.0.0",
    title="mcpsync conformance fixtures",
    instructions="Fixtures for the MCP conformance suite.",
    # A fixed key keeps requestState valid across restarts of this test fixture; a real
    # server takes its key from configuration.
    request_state_key=os.environ.get("MCPSYNC_REQUEST_STATE_KEY", "mcpsync-conformance"),
)


# -- media -----------------------------------------------------------------------------


def _png_1x1_red() -> bytes:
    """A valid 1x1 red PNG, built here rather than pasted in."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")             # filter 0, one red pixel
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


def _wav_silence(samples: int = 800, rate: int = 8000) -> bytes:
    """A valid mono 8-bit PCM WAV of 0.1 s of silence."""
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
            + b"fmt " + struct.pack("<I", len(fmt)) + fmt
            + b"data" + struct.pack("<I", len(data)) + data)


PNG = _png_1x1_red()
PNG_B64 = base64.b64encode(PNG).decode("ascii")
WAV_B64 = base64.b64encode(_wav_silence()).decode("ascii")


# -- asking the client under chosen names (MRTR) ---------------------------------------


@dataclass(frozen=True)
class Elicit:
    message: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Sample:
    prompt: str
    max_tokens: int


@dataclass(frozen=True)
class ListRoots:
    pass


Question = Elicit | Sample | ListRoots
_CAPABILITY = {Elicit: "elicitation", Sample: "sampling", ListRoots: "roots"}


def _is_modern(ctx: HandlerContext) -> bool:
    version = ctx.session.protocol_version
    return version is not None and features(version).era == "modern"


def _earlier_answers(ctx: HandlerContext) -> dict[str, dict[str, Any]]:
    """Answers of earlier rounds and this retry's responses, for the questions the server
    asked (its signed requestState says which); anything else the client sent is ignored.
    """
    return verified_answers(server, ctx.method, ctx.params)


def _decode(question: Question, answer: dict[str, Any]) -> Any:
    """The typed answer, or ``None`` when it does not fit the question (then: ask again)."""
    try:
        if isinstance(question, Elicit):
            if answer.get("action") not in ("accept", "decline", "cancel"):
                return None
            return from_wire(ElicitResult, answer)
        if isinstance(question, Sample):
            if "content" not in answer or "role" not in answer:
                return None
            return from_wire(CreateMessageResult, answer)
        roots = answer.get("roots")
        if not isinstance(roots, list):
            return None
        return [from_wire(Root, item) for item in roots]
    except (TypeError, ValueError, KeyError):
        return None


def _wire_request(question: Question) -> dict[str, Any]:
    if isinstance(question, Elicit):
        return {"method": "elicitation/create",
                "params": {"message": question.message, "requestedSchema": question.schema}}
    if isinstance(question, Sample):
        return {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user",
                          "content": {"type": "text", "text": question.prompt}}],
            "maxTokens": question.max_tokens}}
    return {"method": "roots/list", "params": {}}


def ask_all(ctx: HandlerContext, questions: dict[str, Question]) -> dict[str, Any]:
    """Ask every question; answers by key (``ElicitResult``, ``CreateMessageResult`` or a
    ``list[Root]``).

    Handshake era: one real request after another (``ctx.elicit`` and friends). 2026-07-28:
    one ``InputRequiredResult`` naming every unanswered question under its own key, as the
    suite expects; answers that do not fit their question are asked for again.
    """
    if not _is_modern(ctx):
        out: dict[str, Any] = {}
        for key, question in questions.items():
            if isinstance(question, Elicit):
                out[key] = ctx.elicit(question.message, question.schema)
            elif isinstance(question, Sample):
                out[key] = ctx.sample(question.prompt, max_tokens=question.max_tokens)
            else:
                out[key] = ctx.list_roots()
        return out
    missing_caps = {_CAPABILITY[type(q)] for q in questions.values()
                    if not ctx.session.supports(_CAPABILITY[type(q)])}
    if missing_caps:
        names = ", ".join(sorted(missing_caps))
        raise MCPError(f"Missing required client capability: {names}",
                       code=MISSING_CLIENT_CAPABILITY,
                       data={"requiredCapabilities": {c: {} for c in sorted(missing_caps)}})
    earlier = _earlier_answers(ctx)
    decoded: dict[str, Any] = {}
    for key, question in questions.items():
        if key in earlier:
            value = _decode(question, earlier[key])
            if value is not None:
                decoded[key] = value
    unanswered = {key: _wire_request(q) for key, q in questions.items() if key not in decoded}
    if unanswered:
        raise InputRequired(unanswered)
    return decoded


def _content_text(answer: ElicitResult) -> str:
    return json.dumps(answer.content or {}, sort_keys=True)


# -- tools with a hand-written input schema --------------------------------------------


def add_tool_with_schema(fn: Callable[..., Any], input_schema: dict[str, Any],
                         *, name: str | None = None) -> None:
    """Register ``fn`` as a tool that advertises and enforces ``input_schema`` verbatim."""
    server.add_tool(fn, name=name, input_schema=input_schema)


# -- tools: content ----------------------------------------------------------------------
# Registration order is tools/list order: http-header-validation calls the first tool
# with empty arguments and expects a success, so the first tool takes no arguments.


@server.tool()
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> ImageContent:
    """Returns a 1x1 red PNG image."""
    return ImageContent(data=PNG_B64, mime_type="image/png")


@server.tool()
def test_audio_content() -> AudioContent:
    """Returns a short WAV clip."""
    return AudioContent(data=WAV_B64, mime_type="audio/wav")


@server.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Returns an embedded text resource."""
    return EmbeddedResource(resource=TextResourceContents(
        uri="test://embedded-resource", text="This is an embedded resource content.",
        mime_type="text/plain"))


@server.tool()
def test_multiple_content_types() -> list:
    """Returns text, an image and an embedded resource."""
    # A bare ``list``: mcpsync takes ``list[TextContent | ImageContent | ...]`` for
    # structured output (see NOTES.md), so the blocks would fail an output schema.
    return [
        TextContent("Multiple content types test:"),
        ImageContent(data=PNG_B64, mime_type="image/png"),
        EmbeddedResource(resource=TextResourceContents(
            uri="test://mixed-content-resource", text='{"test":"data","value":123}',
            mime_type="application/json")),
    ]


@server.tool()
def test_error_handling() -> CallToolResult:
    """Always fails, with an isError result."""
    return CallToolResult(
        content=[TextContent("This tool intentionally returns an error for testing")],
        is_error=True)


# -- tools: notifications during a call ----------------------------------------------------


@server.tool()
def test_tool_with_logging(ctx: HandlerContext) -> str:
    """Sends three info log messages about 50 ms apart."""
    ctx.log("info", "Tool execution started", logger="conformance")
    ctx.sleep(0.05)
    ctx.log("info", "Tool processing data", logger="conformance")
    ctx.sleep(0.05)
    ctx.log("info", "Tool execution completed", logger="conformance")
    return "Tool with logging executed successfully"


@server.tool()
def test_tool_with_progress(ctx: HandlerContext) -> str:
    """Reports progress 0, 50 and 100 of 100, about 50 ms apart."""
    ctx.progress(0, total=100)
    ctx.sleep(0.05)
    ctx.progress(50, total=100)
    ctx.sleep(0.05)
    ctx.progress(100, total=100)
    return "Tool with progress executed successfully"


@server.tool()
def test_reconnection(ctx: HandlerContext) -> str:
    """Closes its SSE response stream before answering, so the client must resume it
    (GET with Last-Event-ID) to get the result (SEP-1699)."""
    # Streamable HTTP has to provide the stream close (see NOTES.md); over other
    # transports, and until then, this is an ordinary slow tool.
    close = getattr(ctx, "close_sse_stream", None)
    if callable(close):
        close()
    ctx.sleep(0.2)
    return "Reconnection test completed"


# -- tools: asking the client (handshake era: requests; 2026-07-28: MRTR rounds) ----------


@server.tool()
def test_sampling(ctx: HandlerContext, prompt: str) -> str:
    """Asks the client's model to answer a prompt.

    Args:
        prompt: The prompt to send to the LLM.
    """
    reply = ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {reply.text}"


ELICITATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@server.tool()
def test_elicitation(ctx: HandlerContext, message: str) -> str:
    """Asks the user for a username and an email address.

    Args:
        message: The message to show the user.
    """
    answer = ctx.elicit(message, ELICITATION_SCHEMA)
    return f"User response: action={answer.action}, content={_content_text(answer)}"


SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verified user", "default": True},
    },
}


@server.tool()
def test_elicitation_sep1034_defaults(ctx: HandlerContext) -> str:
    """Elicits a form whose fields all have defaults (SEP-1034)."""
    answer = ctx.elicit("Please review and update the form fields with defaults",
                        SEP1034_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={_content_text(answer)}"


SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Untitled single-select",
                           "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "description": "Titled single-select",
                         "oneOf": [{"const": "value1", "title": "First Option"},
                                   {"const": "value2", "title": "Second Option"},
                                   {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "description": "Legacy titled enum",
                       "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Untitled multi-select",
                          "items": {"type": "string",
                                    "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "description": "Titled multi-select",
                        "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                            {"const": "value2", "title": "Second Choice"},
                                            {"const": "value3", "title": "Third Choice"}]}},
    },
}


@server.tool()
def test_elicitation_sep1330_enums(ctx: HandlerContext) -> str:
    """Elicits a form with all five enum variants (SEP-1330)."""
    answer = ctx.elicit("Please select options from the enum fields", SEP1330_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={_content_text(answer)}"


# -- tools: 2026-07-28 multi round-trip requests (SEP-2322) -------------------------------

NAME_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}},
                               "required": ["name"]}
OK_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                             "required": ["ok"]}
COLOR_SCHEMA: dict[str, Any] = {"type": "object",
                                "properties": {"color": {"type": "string"}},
                                "required": ["color"]}
CONTEXT_SCHEMA: dict[str, Any] = {"type": "object",
                                  "properties": {"context": {"type": "string"}},
                                  "required": ["context"]}


def _field(answer: ElicitResult, name: str, fallback: str) -> str:
    if answer.action != "accept":
        return f"({answer.action})"
    return str((answer.content or {}).get(name, fallback))


@server.tool()
def test_input_required_result_elicitation(ctx: HandlerContext) -> str:
    """Asks for the user's name under the input key "user_name", then greets them."""
    answers = ask_all(ctx, {"user_name": Elicit("What is your name?", NAME_SCHEMA)})
    return f"Hello, {_field(answers['user_name'], 'name', 'stranger')}!"


@server.tool()
def test_input_required_result_sampling(ctx: HandlerContext) -> str:
    """Asks the client's model for the capital of France."""
    reply = ctx.sample("What is the capital of France?", max_tokens=100)
    return f"The model answered: {reply.text}"


@server.tool()
def test_input_required_result_list_roots(ctx: HandlerContext) -> str:
    """Lists the client's roots."""
    roots = ctx.list_roots()
    return "Client roots: " + ", ".join(root.uri for root in roots)


@server.tool()
def test_input_required_result_request_state(ctx: HandlerContext) -> str:
    """Asks for a confirmation; the answer comes back in signed requestState."""
    answer = ctx.elicit("Please confirm", OK_SCHEMA)
    return f"state-ok: confirmed={_field(answer, 'ok', 'false')}"


@server.tool()
def test_input_required_result_multiple_inputs(ctx: HandlerContext) -> str:
    """Asks for a name, a model greeting and the client's roots in one round."""
    answers = ask_all(ctx, {
        "user_name": Elicit("What is your name?", NAME_SCHEMA),
        "greeting": Sample("Generate a greeting", 50),
        "client_roots": ListRoots(),
    })
    roots = ", ".join(root.uri for root in answers["client_roots"])
    return (f"name={_field(answers['user_name'], 'name', 'stranger')}; "
            f"greeting={answers['greeting'].text}; roots={roots}")


@server.tool()
def test_input_required_result_multi_round(ctx: HandlerContext) -> str:
    """Asks two questions in two rounds."""
    name = ctx.elicit("Step 1: What is your name?", NAME_SCHEMA)
    color = ctx.elicit("Step 2: What is your favorite color?", COLOR_SCHEMA)
    return (f"{_field(name, 'name', 'stranger')} likes "
            f"{_field(color, 'color', 'no color')}")


@server.tool()
def test_input_required_result_tampered_state(ctx: HandlerContext) -> str:
    """Asks for a confirmation; a tampered requestState is refused with -32602."""
    answer = ctx.elicit("Please confirm", OK_SCHEMA)
    return f"confirmed={_field(answer, 'ok', 'false')}"


@server.tool()
def test_input_required_result_capabilities(ctx: HandlerContext) -> str:
    """Asks only through the capabilities the request declares (elicitation, sampling)."""
    parts = []
    if ctx.session.supports("elicitation"):
        parts.append("name=" + _field(ctx.elicit("What is your name?", NAME_SCHEMA),
                                      "name", "stranger"))
    if ctx.session.supports("sampling"):
        parts.append("model=" + ctx.sample("Say hello", max_tokens=20).text)
    return "; ".join(parts) or "no input capability declared"


@server.prompt()
def test_input_required_result_prompt(ctx: HandlerContext) -> str:
    """A prompt that asks the user for its context first."""
    answer = ctx.elicit("What context should the prompt use?", CONTEXT_SCHEMA)
    return f"Answer using this context: {_field(answer, 'context', 'none')}"


# -- tools: server-stateless (SEP-2575) diagnostics ----------------------------------------


@server.tool()
def test_missing_capability(ctx: HandlerContext) -> str:
    """Needs the client's sampling capability (-32021 in 2026-07-28 when undeclared)."""
    return "model: " + ctx.sample("Say hello", max_tokens=20).text


@server.tool()
def test_streaming_elicitation(ctx: HandlerContext) -> str:
    """Elicits a name; in 2026-07-28 the answer stream carries an InputRequiredResult."""
    return "Hello, " + _field(ctx.elicit("What is your name?", NAME_SCHEMA), "name",
                              "stranger")


@server.tool()
def test_logging_tool(ctx: HandlerContext) -> str:
    """Logs at every level; a request without a log level must receive none of them."""
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, f"{level} message from test_logging_tool", logger="conformance")
    return "logged"


_change_lock = threading.Lock()


def _temporary_tool() -> str:
    """A tool that exists only while test_trigger_tool_change runs."""
    return "temporary"


def _temporary_prompt() -> str:
    """A prompt that exists only while test_trigger_prompt_change runs."""
    return "temporary"


@server.tool()
def test_trigger_tool_change() -> str:
    """Adds and removes a tool, so the tool list changes (twice)."""
    with _change_lock:
        server.add_tool(_temporary_tool, name="test_temporary_tool")
        server.remove_tool("test_temporary_tool")
    return "tool list changed"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Adds and removes a prompt, so the prompt list changes (twice)."""
    with _change_lock:
        server.prompt("test_temporary_prompt")(_temporary_prompt)
        server.prompts.remove("test_temporary_prompt")
    return "prompt list changed"


# -- tools with hand-written schemas -------------------------------------------------------

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        },
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}},
           "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
_json_schema_validator = jsonschema.Draft202012Validator(JSON_SCHEMA_2020_12)


def json_schema_2020_12_tool(ctx: HandlerContext, name: Any = None, address: Any = None,
                             contactMethod: Any = None, phone: Any = None,
                             email: Any = None) -> CallToolResult:
    """Tool with JSON Schema 2020-12 features."""
    arguments = ctx.params.get("arguments") or {}
    problems = [e.message for e in _json_schema_validator.iter_errors(arguments)]
    if problems:
        return CallToolResult(content=[TextContent(
            "Invalid arguments for tool 'json_schema_2020_12_tool': " + "; ".join(problems))],
            is_error=True)
    via = phone if contactMethod == "phone" else email
    return CallToolResult(content=[TextContent(f"Contact {name or 'someone'} via {via}")])


add_tool_with_schema(json_schema_2020_12_tool, JSON_SCHEMA_2020_12)

X_MCP_HEADER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "Mirrored into Mcp-Param-Region",
                   "x-mcp-header": "Region"},
    },
    "required": ["region"],
}


def test_x_mcp_header(region: str) -> str:
    """Echoes its region argument, which clients mirror into an Mcp-Param-Region header
    (SEP-2243)."""
    return f"region={region}"


add_tool_with_schema(test_x_mcp_header, X_MCP_HEADER_SCHEMA)


# -- resources -------------------------------------------------------------------------------
# test://static-text first: the caching scenario reads the first resource listed.


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


@server.resource("test://template/{id}/data", name="template-data",
                 mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """Data for one id, substituted from the template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


# -- prompts -----------------------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage | str]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    resource = EmbeddedResource(resource=TextResourceContents(
        uri=resourceUri, text="Embedded resource content for testing.",
        mime_type="text/plain"))
    return [PromptMessage("user", resource), "Please process the embedded resource above."]


@server.prompt()
def test_prompt_with_image() -> list[PromptMessage | str]:
    """A prompt with an image."""
    image = ImageContent(data=PNG_B64, mime_type="image/png")
    return [PromptMessage("user", image), "Please analyze the image above."]


# -- tasks (the io.modelcontextprotocol/tasks extension, SEP-2663; and v1, 2025-11-25) ------


@server.tool()
def greet(name: str) -> str:
    """Greets someone (never a task)."""
    return f"Hello, {name}!"


@server.tool(task="optional")
def slow_compute(ctx: HandlerContext, seconds: float = 1.0, label: str = "") -> str:
    """Sleeps ``seconds`` (waking at once when the task is cancelled), then answers."""
    ctx.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds} s"


@server.tool(task="required")
def failing_job(ctx: HandlerContext) -> CallToolResult:
    """Reports a tool execution error after about a second."""
    ctx.sleep(1.0)
    return CallToolResult(content=[TextContent(text="the job failed")], is_error=True)


@server.tool(task="optional")
def protocol_error_job(ctx: HandlerContext) -> str:
    """Fails with a protocol-level (JSON-RPC) error."""
    raise MCPError("internal failure in protocol_error_job", code=-32603)


CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                  "required": ["confirm"]}


@server.tool(task="optional")
def confirm_delete(ctx: HandlerContext, filename: str) -> str:
    """Asks the user to confirm, then "deletes" ``filename``."""
    answer = ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA)
    confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
    return f"{'Deleted' if confirmed else 'Kept'} {filename}"


@server.tool(task="optional")
def multi_input(ctx: HandlerContext) -> str:
    """Asks two questions at once (two inputRequests pending together)."""
    first, second = ctx.ask_all(
        lambda: ctx.elicit("First name?", NAME_SCHEMA),
        lambda: ctx.elicit("Confirm?", CONFIRM_SCHEMA))
    return f"Got {_field(first, 'name', '?')} and {_field(second, 'confirm', '?')}"


@server.tool(task="required", defer_task=True)
def test_tool_with_task(ctx: HandlerContext) -> str:
    """Asks for ``user_name`` in a plain multi round-trip round, then runs as a task."""
    answers = ask_all(ctx, {"user_name": Elicit("What is your name?", NAME_SCHEMA)})
    name = _field(answers["user_name"], "name", "stranger")
    raise RunAsTask(_greet_later, name)


def _greet_later(ctx: HandlerContext, name: str) -> str:
    ctx.sleep(0.2)
    return f"Hello, {name}, from a task!"


# -- completion --------------------------------------------------------------------------------

ARG_SUGGESTIONS = ("paris", "park", "party", "test", "testValue1", "testing")


@server.completer("test_prompt_with_arguments", "arg1")
def complete_arg1(value: str, context: dict[str, str]) -> list[str]:
    return [s for s in ARG_SUGGESTIONS if s.startswith(value)]


@server.completer("test_prompt_with_arguments", "arg2")
def complete_arg2(value: str, context: dict[str, str]) -> list[str]:
    return [s for s in ARG_SUGGESTIONS if s.startswith(value)]


@server.completer("test://template/{id}/data", "id")
def complete_id(value: str, context: dict[str, str]) -> list[str]:
    return [s for s in ("1", "2", "3", "123") if s.startswith(value)]


__all__ = ["ask_all", "server"]

if __name__ == "__main__":
    server.run_stdio()
