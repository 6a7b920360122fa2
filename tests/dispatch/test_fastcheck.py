"""The compiled fast check accepts exactly what jsonschema accepts, on the schemas mcpsync
generates: the test servers' tools and a spread of hints built directly."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from typing import Annotated, Any, Literal, NamedTuple, TypedDict

import annotated_types as at
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from mcpsync import Client, Server
from mcpsync.dispatch.fastcheck import SchemaValidator, compile_schema
from mcpsync.dispatch.schema import SchemaBuilder
from tests.server import fixture_server, hardening_server, pydantic_server, types_server


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Flag(enum.IntEnum):
    ON = 1
    OFF = 0


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@dataclasses.dataclass
class Tree:
    label: str
    children: list[Point]


class Pair(NamedTuple):
    a: int
    b: str = "b"


class Inner(BaseModel):
    b: int


class Outer(BaseModel):
    inner: Inner


class Movie(TypedDict):
    title: str
    year: int


HINTS: list[Any] = [
    int, float, str, bool, None, Any, list[int], list[Point], tuple[int, str], tuple[int, ...],
    set[str], frozenset[int], dict[str, int], dict[int, str], dict[float, bool],
    Literal["a", "b"], Literal[1, "x", True], Colour, Flag, Point, Tree, Pair, Movie,
    int | None, int | str, list[int | None] | None, datetime.datetime, datetime.date,
    uuid.UUID, decimal.Decimal, bytes,
    Annotated[int, at.Ge(0), at.Lt(10)], Annotated[float, at.Gt(0.5), at.Le(2)],
    Annotated[int, at.MultipleOf(3)], Annotated[float, at.MultipleOf(0.1)],
    Annotated[str, at.MinLen(2), at.MaxLen(4)], Annotated[list[int], at.Len(1, 3)],
    Annotated[dict[str, int], at.MinLen(1)], list[set[int]],
]


def _hint_schema(hint: Any) -> dict[str, Any]:
    builder = SchemaBuilder()
    schema, _ = builder.build(hint)
    root = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    if builder.defs:
        root["$defs"] = builder.defs
    return root


def _server_schemas() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for module in (fixture_server, hardening_server, pydantic_server, types_server):
        for tool in module.server.tools._tools.values():
            binding = tool.binding
            found.append((f"{module.__name__}.{binding.name}", binding.input_schema))
            if binding.output_schema is not None:
                found.append((f"{module.__name__}.{binding.name}:out", binding.output_schema))
    return found


SCHEMAS = _server_schemas() + [(repr(h), _hint_schema(h)) for h in HINTS]


def _walk(schema: Any, names: set[str], leaves: list[Any]) -> None:
    """Property names and enum/const values, so random instances come near the schemas."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                names.update(value)
            if key == "enum" and isinstance(value, list):
                leaves.extend(value)
            if key == "const":
                leaves.append(value)
            _walk(value, names, leaves)
    elif isinstance(schema, list):
        for item in schema:
            _walk(item, names, leaves)


_NAMES: set[str] = {"v", "result", "x", "y"}
_LEAVES: list[Any] = []
for _, _schema in SCHEMAS:
    _walk(_schema, _NAMES, _LEAVES)

_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-12, 12), st.integers(),
    st.sampled_from([0.0, 1.0, 0.5, 2.0, 0.3, 1e308, -0.0, 3.0, 0.30000000000000004]),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
    st.sampled_from(["2024-01-02T03:04:05Z", "12", "-3", "1.5e3", "aGk=", "red", "a", "b"]),
    st.sampled_from(_LEAVES or [None]),
)
_json = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(sorted(_NAMES)), st.text(max_size=3)),
                        inner, max_size=5)),
    max_leaves=12)


@st.composite
def _instance(draw: st.DrawFn) -> tuple[int, Any]:
    """A schema index and an object whose keys mostly come from that schema's properties."""
    index = draw(st.integers(0, len(SCHEMAS) - 1))
    props = SCHEMAS[index][1].get("properties", {})
    value = draw(st.dictionaries(st.sampled_from(sorted(props) or ["v"]), _json, max_size=6))
    if draw(st.booleans()):
        value.update(draw(st.dictionaries(st.text(max_size=3), _json, max_size=2)))
    return index, value


def test_every_generated_schema_compiles():
    """The test servers' schemas all take the fast path (no jsonschema on their calls)."""
    missing = [name for name, schema in SCHEMAS if compile_schema(schema) is None]
    assert missing == []


_CHECKS = [(compile_schema(schema), jsonschema.Draft202012Validator(schema))
           for _, schema in SCHEMAS]


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(_instance())
def test_fast_check_agrees_with_jsonschema(case: tuple[int, Any]):
    index, value = case
    fast, slow = _CHECKS[index]
    assert fast is not None
    assert fast(value) == slow.is_valid(value), (SCHEMAS[index][0], value)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, len(SCHEMAS) - 1), _json)
def test_fast_check_agrees_on_any_json(index: int, value: Any):
    fast, slow = _CHECKS[index]
    assert fast is not None
    assert fast(value) == slow.is_valid(value), (SCHEMAS[index][0], value)


@pytest.mark.parametrize("schema", [
    {"type": "object", "patternProperties": {"^a": {}}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
    {"type": "object", "properties": {"a": {"$ref": "https://example.com/s"}}},
    {"type": "object", "if": {}, "then": {}},
    {"type": "object", "properties": {"a": {"type": "decimal"}}},
    {"type": "object", "properties": {"a": {"minLength": -1}}},
    {"type": "object", "properties": {"a": {"pattern": "("}}},
])
def test_schemas_outside_the_subset_are_left_to_jsonschema(schema):
    assert compile_schema(schema) is None


def test_a_refusal_gets_jsonschema_error_messages():
    validator = SchemaValidator(_hint_schema(list[Point]))
    assert validator.fast
    assert validator.errors({"v": [{"x": 1}]}) == []
    errors = validator.errors({"v": [{"y": 1}]})
    assert [(list(e.absolute_path), e.message) for e in errors] == [
        (["v", 0], "'x' is a required property")]


def test_a_bad_hand_written_schema_still_fails_at_once():
    with pytest.raises(jsonschema.SchemaError):
        SchemaValidator({"type": "object", "properties": {"a": {"type": 3}}}, generated=False)


def test_a_union_with_a_nested_model_decodes_each_member():
    """A union member's schema may refer to ``$defs`` held at the root (a pydantic model
    with a nested model): choosing the member to decode with resolves them too. This was an
    internal error (unresolvable reference) on every call."""
    server = Server("union")

    @server.tool()
    def pick(x: Outer | int) -> str:
        return type(x).__name__

    with Client.memory(server) as client:
        assert client.call_tool("pick", {"x": {"inner": {"b": 1}}}).text == "Outer"
        assert client.call_tool("pick", {"x": 3}).text == "int"
        refused = client.call_tool("pick", {"x": {"inner": {}}})
        assert refused.is_error and "is not valid under any of the given schemas" in refused.text
