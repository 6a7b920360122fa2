"""mcpsync.protocol.http_headers, sans-IO: value encoding, x-mcp-header maps, and the
server's header-vs-body check (SEP-2243)."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpsync.protocol.http_headers import (
    HeaderValueError,
    decode_value,
    encode_value,
    header_params,
    mismatch,
    request_headers,
    valid_tools,
)

# The encoding table of the Streamable HTTP spec (2026-07-28, "Header value encoding").
TABLE = [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),  # the sentinel shape
    ("tab\there", "=?base64?dGFiCWhlcmU=?="),  # a control character
    ("inner space ok", "inner space ok"),
    (True, "true"),
    (False, "false"),
    (42, "42"),
    (-7, "-7"),
]


@pytest.mark.parametrize(("value", "header"), TABLE)
def test_encode_table(value, header):
    assert encode_value(value) == header


@pytest.mark.parametrize(("value", "header"), TABLE)
def test_decode_table(value, header):
    expected = value if isinstance(value, str) else header  # bool/int decode to their text
    assert decode_value(header) == expected


@pytest.mark.parametrize("header", [
    "=?base64?SGVsbG8?=",        # bad padding
    "=?base64?SGVs!!!bG8=?=",    # characters outside the alphabet
    "=?base64?/w==?=",           # not UTF-8 once decoded
    "caf\u00e9",                 # a raw non-ASCII value
    "a\x01b",                    # a raw control character
])
def test_decode_rejects(header):
    with pytest.raises(HeaderValueError):
        decode_value(header)


@pytest.mark.parametrize(("header", "text"), [
    ("SGVsbG8=", "SGVsbG8="),                      # no wrapper: literal
    ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),    # no ?= suffix: literal
    ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are lowercase only
    ("  test_simple_text  ", "test_simple_text"),  # optional whitespace trimmed
    ("=?base64?SGVsbG8=?=", "Hello"),
])
def test_decode_literals_and_ows(header, text):
    assert decode_value(header) == text


@given(st.one_of(st.text(st.characters(blacklist_categories=("Cs",))), st.booleans(),
                 st.integers(-(2**53 - 1), 2**53 - 1)))
def test_round_trip(value):
    header = encode_value(value)
    assert all(0x20 <= ord(c) <= 0x7E for c in header)
    assert header == header.strip(" \t") or header == ""
    text = "true" if value is True else "false" if value is False else str(value)
    assert decode_value(header) == text


# -- header_params -----------------------------------------------------------------------


def obj(**properties):
    return {"type": "object", "properties": properties}


def test_header_params_valid_placements():
    schema = obj(region={"type": "string", "x-mcp-header": "Region"},
                 count={"type": "integer", "x-mcp-header": "Count"},
                 dry={"type": "boolean", "x-mcp-header": "Dry-Run"},
                 opts=obj(zone={"type": "string", "x-mcp-header": "Zone"}),
                 plain={"type": "string"})
    assert header_params(schema) == {"Region": ("region",), "Count": ("count",),
                                     "Dry-Run": ("dry",), "Zone": ("opts", "zone")}
    assert header_params(obj(a={"type": "string"})) == {}
    assert header_params({"type": "object"}) == {}


@pytest.mark.parametrize("schema", [
    obj(x={"type": "number", "x-mcp-header": "X"}),                       # number
    obj(x={"type": "array", "items": {"type": "string"}, "x-mcp-header": "X"}),
    obj(x={"type": "string", "x-mcp-header": ""}),                         # empty name
    obj(x={"type": "string", "x-mcp-header": "Bad Name"}),                 # not a token
    obj(x={"type": "string", "x-mcp-header": "a\r\nb"}),                   # CR/LF
    obj(x={"type": "string", "x-mcp-header": 5}),                          # not a string
    obj(x={"type": "string", "x-mcp-header": "Dup"},
        y={"type": "string", "x-mcp-header": "dup"}),                      # case-insensitive dup
    obj(x={"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}),
    obj(x={"anyOf": [{"type": "string", "x-mcp-header": "X"}]}),
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/r"}},
     "$defs": {"r": {"type": "string", "x-mcp-header": "X"}}},
    {"type": "object", "if": obj(x={"type": "string", "x-mcp-header": "X"})},
])
def test_header_params_invalid_placements(schema):
    assert header_params(schema) is None


def test_valid_tools_drops_invalid_with_warning():
    good = {"name": "good", "inputSchema": obj(r={"type": "string", "x-mcp-header": "R"})}
    bad = {"name": "bad", "inputSchema": obj(r={"type": "number", "x-mcp-header": "R"})}
    plain = {"name": "plain", "inputSchema": {"type": "object"}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept, maps = valid_tools([good, bad, plain])
    assert kept == [good, plain]
    assert maps == {"good": {"R": ("r",)}}
    assert any("bad" in str(w.message) for w in caught)


# -- request_headers / mismatch ----------------------------------------------------------

MAP = {"Region": ("region",), "Count": ("count",), "Dry": ("dry",), "Zone": ("o", "zone")}


def call(name="t", **arguments):
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def lower(headers):
    return {k.lower(): v for k, v in headers.items()}


def test_request_headers():
    message = call("tool é", region="Hello, 世界", count=3, dry=False, o={"zone": "z1"})
    assert request_headers(message, "2026-07-28", MAP) == {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
        "Mcp-Name": encode_value("tool é"), "Mcp-Param-Region": encode_value("Hello, 世界"),
        "Mcp-Param-Count": "3", "Mcp-Param-Dry": "false", "Mcp-Param-Zone": "z1"}
    # Absent and null arguments get no header.
    assert "Mcp-Param-Region" not in request_headers(call(region=None), "2026-07-28", MAP)
    assert request_headers({"method": "resources/read", "params": {"uri": "test://x"}},
                           "2026-07-28")["Mcp-Name"] == "test://x"
    assert "Mcp-Name" not in request_headers({"method": "tools/list"}, "2026-07-28")


def test_mismatch_agreeing_headers():
    message = call(region="Hello, 世界", count=3, dry=True, o={"zone": "z"})
    assert mismatch(lower(request_headers(message, "2026-07-28", MAP)), message, MAP) is None
    list_message = {"method": "tools/list", "params": {}}
    assert mismatch({"mcp-method": "tools/list"}, list_message) is None


@pytest.mark.parametrize(("headers", "fragment"), [
    ({}, "Mcp-Method header is required"),
    ({"mcp-method": "tools/list"}, "does not match"),
    ({"mcp-method": "TOOLS/CALL", "mcp-name": "t"}, "does not match"),  # values: exact case
    ({"mcp-method": "tools/call"}, "Mcp-Name header is required"),
    ({"mcp-method": "tools/call", "mcp-name": "other"}, "does not match"),
    ({"mcp-method": "tools/call", "mcp-name": "=?base64?SGVsbG8?="}, "invalid base64"),
])
def test_mismatch_method_and_name(headers, fragment):
    problem = mismatch(headers, call(), None)
    assert problem is not None and fragment in problem


def test_mismatch_name_trimmed_and_encoded():
    assert mismatch({"mcp-method": "tools/call", "mcp-name": "  t  "}, call(), None) is None
    assert mismatch({"mcp-method": "tools/call", "mcp-name": encode_value("t ")},
                    call("t "), None) is None
    read = {"method": "resources/read", "params": {"uri": "test://a b"}}
    assert mismatch({"mcp-method": "resources/read", "mcp-name": "test://a b"}, read) is None
    assert "does not match" in mismatch({"mcp-method": "resources/read", "mcp-name": "x"},
                                        read)


@pytest.mark.parametrize(("arguments", "params", "ok"), [
    ({"region": "Hello"}, {"Region": "=?base64?SGVsbG8=?="}, True),
    ({"region": "Hello"}, {"Region": "=?base64?SGVsbG8?="}, False),
    ({"region": "Hello"}, {"Region": "=?base64?SGVs!!!bG8=?="}, False),
    ({"region": "SGVsbG8="}, {"Region": "SGVsbG8="}, True),
    ({"region": "=?base64?SGVsbG8="}, {"Region": "=?base64?SGVsbG8="}, True),
    ({"region": "test-value"}, {}, False),                # present argument, no header
    ({"region": "a"}, {"Region": "b"}, False),
    ({}, {}, True),                                       # absent: no header expected
    ({"region": None}, {}, True),                         # null: no header expected
    ({}, {"Region": "stray"}, True),                      # an extra header is ignored
    ({"count": 42}, {"Count": "42"}, True),
    ({"count": 42}, {"Count": "042"}, True),              # integers compared numerically
    ({"count": 42}, {"Count": "43"}, False),
    ({"count": 42}, {"Count": "forty-two"}, False),
    ({"dry": True}, {"Dry": "true"}, True),
    ({"dry": True}, {"Dry": "True"}, False),
    ({"dry": False}, {}, False),                          # false is a value, not absence
    ({"o": {"zone": "z"}}, {"Zone": "z"}, True),
    ({"o": {"zone": "z"}}, {}, False),
])
def test_mismatch_param_headers(arguments, params, ok):
    headers = {"mcp-method": "tools/call", "mcp-name": "t"}
    headers.update({f"mcp-param-{k.lower()}": v for k, v in params.items()})
    problem = mismatch(headers, call(**arguments), MAP)
    assert (problem is None) is ok, problem


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\ude00\ud83d"])
def test_lone_surrogates_round_trip(text):
    # JSON may carry a lone surrogate in a tool name or URI; its mirrored header used to
    # raise UnicodeEncodeError in the client instead of matching the body.
    header = encode_value(text)
    assert header.isascii() and decode_value(header) == text
