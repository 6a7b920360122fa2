"""Typed binding of the types beyond JSON's own: schema, decoding in, encoding out."""

from __future__ import annotations

import datetime
import decimal
import enum
import pathlib
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest

from mcpsync.dispatch.schema import to_json_value
from mcpsync.dispatch.typed import ToolBinding
from tests.spec import validate


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Pair(NamedTuple):
    a: int
    b: str = "x"


def bind(fn: Any) -> ToolBinding:
    b = ToolBinding.from_function(fn)
    validate("2025-11-25", "Tool", {"name": b.name, "inputSchema": b.input_schema,
                                    **({"outputSchema": b.output_schema}
                                       if b.output_schema else {})})
    return b


def echo_binding(hint: Any) -> tuple[ToolBinding, list[Any]]:
    got: list[Any] = []

    def tool(value):  # type: ignore[no-untyped-def]
        got.append(value)
        return "ok"

    tool.__annotations__ = {"value": hint, "return": str}
    return bind(tool), got


@pytest.mark.parametrize(("hint", "schema", "sent", "received"), [
    (datetime.datetime, {"type": "string", "format": "date-time"}, "2026-07-28T10:00:00Z",
     datetime.datetime(2026, 7, 28, 10, tzinfo=datetime.timezone.utc)),
    (datetime.date, {"type": "string", "format": "date"}, "2026-07-28",
     datetime.date(2026, 7, 28)),
    (datetime.time, {"type": "string", "format": "time"}, "10:11:12.5",
     datetime.time(10, 11, 12, 500000)),
    (uuid.UUID, {"type": "string", "format": "uuid"}, str(uuid.UUID(int=7)), uuid.UUID(int=7)),
    (pathlib.Path, {"type": "string", "format": "path"}, "a/b", pathlib.Path("a/b")),
    (decimal.Decimal, {"anyOf": [{"type": "number"}, {"type": "string"}]}, 0.1,
     decimal.Decimal("0.1")),
    (decimal.Decimal, {"anyOf": [{"type": "number"}, {"type": "string"}]}, "1.10",
     decimal.Decimal("1.10")),
    (bytes, {"type": "string", "contentEncoding": "base64"}, "AAH/", b"\x00\x01\xff"),
    (Pair, {"type": "array", "prefixItems": [{"type": "integer"},
                                             {"type": "string", "default": "x"}],
            "minItems": 1, "maxItems": 2}, [1], Pair(1, "x")),
    (int, {"type": "integer"}, 1.0, 1),
    (list[int], {"type": "array", "items": {"type": "integer"}}, [1.0, 2], [1, 2]),
    (dict[int, str], {"type": "object", "additionalProperties": {"type": "string"},
                      "propertyNames": {"pattern": "^-?[0-9]+$"}}, {"1": "a"}, {1: "a"}),
    (dict[Color, int], {"type": "object", "additionalProperties": {"type": "integer"},
                        "propertyNames": {"enum": ["red", "blue"]}}, {"red": 1},
     {Color.RED: 1}),
    (dict[uuid.UUID, bool], {"type": "object", "additionalProperties": {"type": "boolean"},
                             "propertyNames": {"format": "uuid"}}, {str(uuid.UUID(int=1)): True},
     {uuid.UUID(int=1): True}),
])
def test_schema_and_decoding(hint: Any, schema: dict[str, Any], sent: Any,
                             received: Any) -> None:
    binding, got = echo_binding(hint)
    assert binding.input_schema["properties"]["value"] == schema
    result = binding.call({"value": sent}, None)
    assert "isError" not in result, result
    assert got == [received] and type(got[0]) is type(received)
    if isinstance(received, dict):
        assert [type(k) for k in got[0]] == [type(k) for k in received]
    if isinstance(received, list):
        assert [type(v) for v in got[0]] == [type(v) for v in received]


@pytest.mark.parametrize(("hint", "sent", "why"), [
    (int, 1.5, "1.5 is not of type 'integer'"),
    (datetime.datetime, "noon", "Invalid isoformat string"),
    (datetime.date, "2026-13-01", "month must be in 1..12"),
    (uuid.UUID, "not-a-uuid", "badly formed hexadecimal UUID string"),
    (decimal.Decimal, "one", "'one' is not a decimal number"),
    (decimal.Decimal, "NaN", "not a finite decimal"),
    (bytes, "a", "not valid base64"),
    (dict[int, str], {"one": "1"}, "'one' does not match"),
    (Pair, [1, "b", 3], "is too long"),
])
def test_bad_values_are_an_error_result_naming_the_argument(hint: Any, sent: Any,
                                                            why: str) -> None:
    binding, got = echo_binding(hint)
    result = binding.call({"value": sent}, None)
    assert result["isError"] is True and got == []
    assert why in result["content"][0]["text"]


def test_defaults_of_these_types_are_in_the_schema() -> None:
    def tool(when: datetime.date = datetime.date(2026, 1, 2),
             price: decimal.Decimal = decimal.Decimal("2.50"),
             color: Color = Color.BLUE) -> None: ...

    props = bind(tool).input_schema["properties"]
    assert props["when"]["default"] == "2026-01-02"
    assert props["price"]["default"] == "2.50"
    assert props["color"]["default"] == "blue"


@dataclass
class Receipt:
    at: datetime.datetime
    total: decimal.Decimal
    raw: bytes
    tags: dict[int, Color]


def test_encoding_out_matches_decoding_in() -> None:
    def tool() -> Receipt:
        return Receipt(datetime.datetime(2026, 1, 2, 3, 4, 5), decimal.Decimal("9.90"),
                       b"\x00", {1: Color.RED})

    binding = bind(tool)
    assert binding.output_schema is not None
    assert binding.output_schema["properties"]["at"] == {"type": "string",
                                                         "format": "date-time"}
    result = binding.call({}, None)
    assert result["structuredContent"] == {"at": "2026-01-02T03:04:05", "total": "9.90",
                                           "raw": "AA==", "tags": {"1": "red"}}
    assert to_json_value(Pair(1, "b")) == [1, "b"]
    assert to_json_value({pathlib.PurePosixPath("a"): uuid.UUID(int=0)}) == {
        "a": "00000000-0000-0000-0000-000000000000"}


def test_a_dict_key_type_json_cannot_spell_is_refused_at_registration() -> None:
    def tool(value: dict[tuple[int, int], str]) -> None: ...

    with pytest.raises(TypeError, match=r"tool 'tool', parameter 'value': a dict key"):
        ToolBinding.from_function(tool)
