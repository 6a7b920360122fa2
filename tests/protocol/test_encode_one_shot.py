"""jsonrpc.encode's prebuilt C encoder answers exactly as json's own encoder would."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsync.errors import UnencodableMessageError
from mcpsync.protocol import jsonrpc
from mcpsync.protocol.jsonrpc import Notification, Request, Response, encode

# No lone surrogates: those take encode's own path (test_wire_limits.py).
_text = st.text(st.characters(blacklist_categories=("Cs",)))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)


def _reference(wire: dict[str, Any]) -> bytes:
    return json.dumps(wire, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


def test_the_prebuilt_encoder_is_in_use():
    assert jsonrpc._dumps_message is not jsonrpc._dumps  # CPython has the C encoder


@settings(max_examples=300, deadline=None)
@given(st.integers() | _text, st.dictionaries(_text, _json, max_size=5))
def test_bytes_are_jsons(msg_id: Any, result: dict[str, Any]):
    for message in (Response(msg_id, result), Request(msg_id, "m", result),
                    Notification("n", result)):
        assert encode(message) == _reference(message.to_wire())


@pytest.mark.parametrize(("value", "why"), [
    ({"x": float("nan")}, "Out of range float values are not JSON compliant"),
    ({"x": float("inf")}, "Out of range float values are not JSON compliant"),
    ({"x": object()}, "Object of type object is not JSON serializable"),
    ({"x": {1, 2}}, "Object of type set is not JSON serializable"),
])
def test_unencodable_values_say_why_as_before(value: dict[str, Any], why: str):
    with pytest.raises(UnencodableMessageError, match=why):
        encode(Response(1, value))


def test_a_cycle_is_named_a_cycle():
    loop: dict[str, Any] = {}
    loop["self"] = [loop]
    with pytest.raises(UnencodableMessageError, match="Circular reference detected"):
        encode(Response(1, loop))


def test_too_deep_is_named_too_deep():
    value: dict[str, Any] = {}
    for _ in range(100_000):
        value = {"v": value}
    with pytest.raises(UnencodableMessageError, match="nested too deeply"):
        encode(Response(1, value))
