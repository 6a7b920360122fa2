import json

import pytest

from mcpsync.protocol import jsonrpc
from mcpsync.protocol.jsonrpc import ErrorResponse, Invalid, Notification, Request, Response
from tests.spec import validate_message


def one(data):
    items = jsonrpc.decode(data)
    assert len(items) == 1
    return items[0]


def test_request_notification_response_roundtrip():
    for message in (
        Request(1, "tools/list", {"cursor": "x"}),
        Request("a-1", "ping"),
        Notification("notifications/initialized"),
        Response(7, {"tools": []}),
        ErrorResponse(7, {"code": -32601, "message": "nope"}),
    ):
        data = jsonrpc.encode(message)
        assert b"\n" not in data
        again = one(data)
        assert type(again) is type(message)
        assert again.to_wire() == message.to_wire()
        validate_message("2025-11-25", json.loads(data))


def test_parse_error_has_null_id():
    item = one(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert isinstance(item, Invalid)
    assert item.reply.id is None
    assert item.reply.error["code"] == -32700
    wire = json.loads(jsonrpc.encode(item.reply))
    assert "id" in wire and wire["id"] is None
    validate_message("2025-11-25", wire)


@pytest.mark.parametrize(
    ("raw", "reply_id"),
    [
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),  # booleans are not ids
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),  # null ids are forbidden
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "1.0", "id": 3, "method": "ping"}, 3),
        ({"id": 3, "method": "ping"}, 3),
        ({"jsonrpc": "2.0", "id": 4, "method": 12}, 4),
        ({"jsonrpc": "2.0", "id": 5, "method": "x", "params": [1, 2]}, 5),
        ({"jsonrpc": "2.0", "id": 6}, 6),
        ("just a string", None),
        (42, None),
    ],
)
def test_invalid_requests_get_32600(raw, reply_id):
    item = one(json.dumps(raw))
    assert isinstance(item, Invalid)
    assert item.reply is not None
    assert item.reply.error["code"] == -32600
    assert item.reply.id == reply_id
    assert item.reply.error["message"].startswith("Invalid request")


def test_notification_with_params():
    item = one(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}')
    assert isinstance(item, Notification)
    assert item.params == {"requestId": 3}


def test_malformed_responses_are_dropped_silently():
    for raw in (
        {"jsonrpc": "2.0", "id": 1, "result": [1]},
        {"jsonrpc": "2.0", "id": True, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "error": "bad"},
    ):
        item = one(json.dumps(raw))
        assert isinstance(item, Invalid)
        assert item.reply is None


def test_batch_and_empty_batch():
    items = jsonrpc.decode(
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]'
    )
    assert [type(i) for i in items] == [Request, Notification]
    assert jsonrpc.is_batch(b"  [1]") and not jsonrpc.is_batch(b'{"a": 1}')
    (empty,) = jsonrpc.decode(b"[]")
    assert isinstance(empty, Invalid) and empty.reply.error["code"] == -32600


def test_non_ascii_is_utf8_and_one_line():
    data = jsonrpc.encode(Response(1, {"text": "Ωmega\nline"}))
    assert "Ωmega".encode() in data
    assert b"\n" not in data
    assert one(data).result["text"] == "Ωmega\nline"


def test_invalid_utf8_is_parse_error():
    item = one(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}')
    assert isinstance(item, Invalid) and item.reply.error["code"] == -32700


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
@pytest.mark.parametrize("as_bytes", [True, False])
def test_non_json_numbers_are_a_parse_error(constant, as_bytes):
    """``Infinity`` and ``NaN`` are not JSON (RFC 8259): Python's parser accepts them, and a
    tool's argument then reached validation as a float that cannot be compared or encoded
    (found by the fast-path property test). Refused at the door, like any non-JSON."""
    text = ('{"jsonrpc":"2.0","id":1,"method":"tools/call",'
            f'"params":{{"name":"x","arguments":{{"v":{constant}}}}}}}')
    item = one(text.encode() if as_bytes else text)
    assert isinstance(item, Invalid) and item.reply.error["code"] == -32700
    assert constant in item.reply.error["message"]


def test_a_bom_is_still_accepted_on_bytes_only():
    body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert isinstance(one(b"\xef\xbb\xbf" + body.encode()), Request)
    item = one("\ufeff" + body)
    assert isinstance(item, Invalid) and item.reply.error["code"] == -32700


_DECODED_AS_BEFORE = [
    '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    '  {"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    '{"jsonrpc":"2.0","id":1,"method":"ping"} {"x":1}',
    '{"jsonrpc":"2.0","id":1,"method":"ping"}}',
    '{"jsonrpc":"2.0","id":1,"method":',
    '{"jsonrpc":"2.0","id":1,"method":"ping", }',
    '',
    '   ',
    'nul',
    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    '"text"',
    '7',
]


@pytest.mark.parametrize("text", _DECODED_AS_BEFORE)
def test_the_scanner_shortcut_decodes_and_refuses_as_json_decode_does(text):
    # A value spanning the whole text goes to the scanner directly; whatever else (blank
    # around it, extra data, nothing, a bad value) must meet the same fate as before.
    def wire(items):
        return [item.reply.error if isinstance(item, Invalid) and item.reply else
                (type(item).__name__, getattr(item, "method", None)) for item in items]

    try:
        expected = jsonrpc._DECODER.decode(text)
    except ValueError as exc:
        expected = f"Parse error: {exc}"
    try:
        got = jsonrpc._parse(text)
    except ValueError as exc:
        got = f"Parse error: {exc}"
    assert got == expected
    assert wire(jsonrpc.decode(text)) == wire(jsonrpc.decode(text.encode()))
