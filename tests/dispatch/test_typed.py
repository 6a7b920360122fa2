"""Typed binding: schemas from hints, validation, decoding, and return-value encoding."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import pytest

from mcpsync import (
    CallToolResult,
    HandlerContext,
    ImageContent,
    InvalidParamsError,
    RequestCancelledError,
    TextContent,
)
from mcpsync.dispatch.typed import ToolBinding, parse_docstring
from tests.spec import validate


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list[str] = field(default_factory=list)


class Movie(TypedDict, total=False):
    title: str
    year: int


def bind(fn, **kw) -> ToolBinding:
    b = ToolBinding.from_function(fn, **kw)
    validate("2025-11-25", "Tool", {"name": b.name, "inputSchema": b.input_schema,
                                    **({"outputSchema": b.output_schema}
                                       if b.output_schema else {})})
    return b


def props(fn):
    return bind(fn).input_schema["properties"]


@pytest.mark.parametrize(("hint", "schema"), [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (type(None), {"type": "null"}),
    (Any, {}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    (tuple[int, str], {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                       "minItems": 2, "maxItems": 2}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (Optional[str], {"anyOf": [{"type": "string"}, {"type": "null"}]}),  # noqa: UP045
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
    (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}),
    (Color, {"enum": ["red", "blue"], "type": "string"}),
    (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
])
def test_schema_for_each_annotation(hint, schema):
    def tool(value): ...

    tool.__annotations__ = {"value": hint}
    assert props(tool)["value"] == schema


def test_dataclass_typeddict_defaults_and_required():
    def tool(p: Point, m: Movie, n: int = 3, name: str | None = None) -> None: ...

    b = bind(tool)
    assert b.input_schema["required"] == ["p", "m"]
    p = b.input_schema["properties"]
    assert p["p"] == {"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number", "default": 0.0},
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["x"]}
    assert p["m"]["properties"] == {"title": {"type": "string"}, "year": {"type": "integer"}}
    assert "required" not in p["m"]
    assert p["n"] == {"type": "integer", "default": 3}


def test_context_parameter_is_left_out_and_passed():
    seen = []

    def tool(ctx: HandlerContext, a: int) -> int:
        seen.append(ctx)
        return a

    b = bind(tool)
    assert list(b.input_schema["properties"]) == ["a"] and b.context_param == "ctx"
    b.call({"a": 1}, "the-context")
    assert seen == ["the-context"]


def test_docstring_gives_description_and_argument_texts():
    def tool(city: str, days: int = 1) -> str:
        """Forecast a city.

        More detail here.

        Args:
            city: Which city.
            days: How many
                days ahead.
        """
        return city

    b = bind(tool)
    assert b.description == "Forecast a city.\n\nMore detail here."
    assert b.input_schema["properties"]["city"]["description"] == "Which city."
    assert b.input_schema["properties"]["days"]["description"] == "How many days ahead."
    assert parse_docstring(None) == (None, {})


def test_unsupported_signatures_fail_at_registration():
    def star(*args: int) -> None: ...

    def weird(x: complex) -> None: ...

    with pytest.raises(TypeError, match="args"):
        ToolBinding.from_function(star)
    with pytest.raises(TypeError, match="'x'"):
        ToolBinding.from_function(weird)


def test_validation_errors_are_is_error_results_naming_every_problem():
    def tool(a: int, b: list[int]) -> int:
        return a

    result = bind(tool).call({"a": "x", "b": [1, "two"]}, None)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "'a'" in text and "'b/1'" in text and "is not of type 'integer'" in text
    validate("2025-11-25", "CallToolResult", result)
    missing = bind(tool).call({}, None)
    assert "'a' is a required property" in missing["content"][0]["text"]


def test_arguments_are_decoded_into_python_types():
    got = {}

    def tool(p: Point, c: Color, pts: list[Point], x: float, maybe: Point | None = None) -> str:
        got.update(p=p, c=c, pts=pts, x=x, maybe=maybe)
        return "ok"

    bind(tool).call({"p": {"x": 1, "tags": ["a"]}, "c": "blue", "pts": [{"x": 2}], "x": 3}, None)
    assert got["p"] == Point(1.0, 0.0, ["a"]) and isinstance(got["p"].x, float)
    assert got["c"] is Color.BLUE
    assert got["pts"] == [Point(2.0)]
    assert got["x"] == 3.0 and isinstance(got["x"], float)
    assert got["maybe"] is None


@pytest.mark.parametrize(("fn", "expected"), [
    (lambda: "hi", {"content": [{"type": "text", "text": "hi"}]}),
    (lambda: None, {"content": []}),
    (lambda: 42, {"content": [{"type": "text", "text": "42"}]}),
    (lambda: True, {"content": [{"type": "text", "text": "true"}]}),
    (lambda: {"a": 1}, {"content": [{"type": "text", "text": '{"a":1}'}],
                        "structuredContent": {"a": 1}}),
    (lambda: TextContent("t"), {"content": [{"type": "text", "text": "t"}]}),
    (lambda: ["a", ImageContent("AA==", "image/png")],
     {"content": [{"type": "text", "text": "a"},
                  {"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
    (lambda: CallToolResult(content=[TextContent("x")], is_error=True),
     {"content": [{"type": "text", "text": "x"}], "isError": True}),
])
def test_unannotated_return_values(fn, expected):
    result = ToolBinding.from_function(fn, name="t").call(None, None)
    assert result == expected
    validate("2025-11-25", "CallToolResult", result)


def test_structured_returns_carry_output_schema():
    def point() -> Point:
        return Point(1.5, tags=["k"])

    def count() -> int:
        return 7

    def listing() -> list[str]:
        return ["a", "b"]

    def text() -> str:
        return "plain"

    b = bind(point)
    assert b.output_schema["required"] == ["x"]
    result = b.call(None, None)
    assert result["structuredContent"] == {"x": 1.5, "y": 0.0, "tags": ["k"]}
    validate("2025-11-25", "CallToolResult", result)
    assert bind(count).output_schema == {"type": "object", "properties": {
        "result": {"type": "integer"}}, "required": ["result"]}
    assert bind(count).call(None, None)["structuredContent"] == {"result": 7}
    assert bind(listing).call(None, None)["structuredContent"] == {"result": ["a", "b"]}
    # A str is wrapped as the official SDK wraps it; its text block is the string itself.
    assert bind(text).output_schema == {"type": "object", "properties": {
        "result": {"type": "string"}}, "required": ["result"]}
    assert bind(text).call(None, None) == {"content": [{"type": "text", "text": "plain"}],
                                           "structuredContent": {"result": "plain"}}
    assert ToolBinding.from_function(text, structured_output=False).output_schema is None
    assert ToolBinding.from_function(count, structured_output=False).output_schema is None


def test_result_not_matching_its_output_schema_is_an_error():
    def liar() -> int:
        return "not an int"  # type: ignore[return-value]

    result = bind(liar).call(None, None)
    assert result["isError"] is True and "output schema" in result["content"][0]["text"]


def test_exceptions():
    def boom() -> str:
        raise KeyError("missing thing")

    def protocol() -> str:
        raise InvalidParamsError("bad")

    def cancelled() -> str:
        raise RequestCancelledError("stop")

    result = bind(boom).call(None, None)
    assert result["isError"] and "Error executing tool boom" in result["content"][0]["text"]
    with pytest.raises(InvalidParamsError):
        bind(protocol).call(None, None)
    with pytest.raises(RequestCancelledError):
        bind(cancelled).call(None, None)


def test_future_annotations_module():
    from tests.dispatch import _future_tools

    b = bind(_future_tools.lookup)
    assert b.input_schema["properties"]["where"]["type"] == "object"
    assert b.call({"where": {"x": 2}}, None)["structuredContent"] == {"result": 2.0}


def test_lists_of_content_unions_are_content_not_structured_output():
    def blocks() -> list[TextContent | ImageContent]:
        return [TextContent(text="a"), ImageContent(data="AAAA", mime_type="image/png")]

    def maybe() -> Optional[list[TextContent]]:  # noqa: UP045 - the Optional form on purpose
        return [TextContent(text="b")]

    for fn in (blocks, maybe):
        binding = ToolBinding.from_function(fn)
        assert binding.output_schema is None
        result = binding.call({}, None)
        assert "isError" not in result and "structuredContent" not in result
        assert result["content"][0]["type"] == "text"


def test_a_hand_written_input_schema_is_advertised_and_enforced():
    from mcpsync import Client, Server

    server = Server("raw-schema")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"tag": {"type": "string", "minLength": 2}},
        "properties": {"tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                       "region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["tags"],
        "additionalProperties": False,
    }

    @server.tool(input_schema=schema)
    def tag(ctx: HandlerContext, **arguments: Any) -> str:
        return ",".join(arguments["tags"]) + f"@{arguments.get('region', '-')}"

    with Client.memory(server) as client:
        (listed,) = client.list_tools()
        assert listed.input_schema == schema
        assert client.call_tool("tag", {"tags": ["ab", "cd"], "region": "eu"}).text == "ab,cd@eu"
        for bad in ({"tags": ["a"]}, {}, {"tags": [], "other": 1}):
            result = client.call_tool("tag", bad)
            assert result.is_error, bad
    with pytest.raises(TypeError):
        ToolBinding.from_function(lambda: "x", input_schema={"type": "string"})
