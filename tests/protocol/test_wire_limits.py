"""Issue #11 at the shared depth: one decode with a nesting bound, one encode whose only
failure is the message's own (sans-IO, no transport involved)."""

from __future__ import annotations

import base64
import json
import math

import pytest

from mcpsync.dispatch.pagination import decode_cursor, encode_cursor
from mcpsync.errors import InvalidParamsError, UnencodableMessageError
from mcpsync.protocol import jsonrpc
from mcpsync.protocol.jsonrpc import (
    MAX_DEPTH,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    Response,
    decode,
    encode,
    encode_answer,
    unencodable_answer,
)
from tests.helpers import stack_probe


def _request(levels: int, *, notification: bool = False, text: bool = False) -> bytes | str:
    """A request whose message nests exactly ``levels`` deep (message 1, params 2, ...)."""
    inner = "[" * (levels - 2) + "]" * (levels - 2)
    head = '{"jsonrpc":"2.0",' + ("" if notification else '"id":7,')
    data = head + '"method":"m","params":{"x":' + inner + "}}"
    return data if text else data.encode()


@pytest.mark.parametrize("text", [False, True])
def test_nesting_up_to_the_limit_is_accepted(text):
    [item] = decode(_request(MAX_DEPTH, text=text))
    assert isinstance(item, Request) and item.id == 7


@pytest.mark.parametrize("text", [False, True])
def test_one_level_over_the_limit_is_an_invalid_request_with_its_id(text):
    [item] = decode(_request(MAX_DEPTH + 1, text=text))
    assert isinstance(item, Invalid) and item.reply is not None
    assert item.reply.id == 7 and item.reply.error["code"] == -32600
    assert str(MAX_DEPTH) in item.reply.error["message"]


@pytest.mark.parametrize("levels", [1000, 100_000])
def test_nesting_past_the_parser_is_an_answer_not_an_exception(levels):
    [item] = decode(_request(levels))
    assert isinstance(item, Invalid) and item.reply is not None
    assert item.reply.id == 7 and item.reply.error["code"] == -32600
    unbalanced = b"[" * levels
    [item] = decode(unbalanced)
    assert isinstance(item, Invalid) and item.reply is not None
    assert item.reply.error["code"] == -32700


def test_too_deep_notification_is_dropped_silently():
    [item] = decode(_request(MAX_DEPTH + 1, notification=True))
    assert isinstance(item, Invalid) and item.reply is None


def test_too_deep_response_fails_the_awaited_call_at_once():
    inner = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    [item] = decode('{"jsonrpc":"2.0","id":3,"result":{"x":' + inner + "}}")
    # Not an ErrorResponse: the peer did not refuse anything; we could not read its answer.
    assert isinstance(item, Invalid) and item.reply is None and item.answer_to == 3


def test_batch_elements_are_judged_one_by_one():
    good = json.loads(_request(MAX_DEPTH))
    bad = json.loads(_request(MAX_DEPTH + 1))
    bad["id"] = 8
    first, second = decode(json.dumps([good, bad]))
    assert isinstance(first, Request)
    assert isinstance(second, Invalid) and second.reply is not None and second.reply.id == 8


def test_wide_shallow_messages_are_not_refused():
    many = {"jsonrpc": "2.0", "id": 1, "method": "m",
            "params": {"rows": [[{"a": [1]}] for _ in range(10_000)]}}
    [item] = decode(json.dumps(many))
    assert isinstance(item, Request)


def test_the_limit_can_be_changed_at_run_time(monkeypatch):
    monkeypatch.setattr(jsonrpc, "MAX_DEPTH", 4)
    [item] = decode(_request(5))
    assert isinstance(item, Invalid)
    [item] = decode(_request(4))
    assert isinstance(item, Request)


# -- encoding --------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    Response(1, {"text": "a\ud800"}),
    Response(1, {"n": math.nan}),
    Response(1, {"n": math.inf}),
    Response(1, {"o": object()}),
    ErrorResponse(1, {"code": -32602, "message": "bad \udc80"}),
    Notification("notifications/message", {"level": "info", "data": "\ud800"}),
    Request(2, "sampling/createMessage", {"x": {1, 2}}),
])
def test_unencodable_messages_raise_the_one_error(message):
    with pytest.raises(UnencodableMessageError) as info:
        encode(message)
    assert isinstance(info.value, ValueError)
    str(info.value).encode("utf-8")  # the explanation itself is always encodable


def test_a_result_nested_too_deep_for_the_encoder_is_unencodable():
    value: dict = {}
    for _ in range(100_000):
        value = {"v": value}
    with pytest.raises(UnencodableMessageError):
        encode(Response(1, value))


def test_circular_result_is_unencodable():
    loop: dict = {}
    loop["self"] = loop
    with pytest.raises(UnencodableMessageError):
        encode(Response(1, loop))


def test_a_lone_surrogate_in_the_peers_id_is_echoed_escaped():
    data = encode(Response("\ud800", {"ok": "é"}))
    assert data.isascii() is False  # the rest stays UTF-8
    data.decode("utf-8")  # valid UTF-8 ...
    assert json.loads(data) == {"jsonrpc": "2.0", "id": "\ud800", "result": {"ok": "é"}}
    assert b'"\\ud800"' in data


def test_unencodable_answers_have_encodable_stand_ins():
    result = Response("\udfff", {"text": "\ud800"})
    with pytest.raises(UnencodableMessageError) as info:
        encode(result)
    stand_in = unencodable_answer(result, str(info.value))
    wire = json.loads(encode(stand_in))
    assert wire["id"] == "\udfff" and wire["error"]["code"] == -32603
    error = ErrorResponse(4, {"code": -32602, "message": "no \ud800", "data": object()})
    wire = json.loads(encode_answer(error))
    assert wire == {"jsonrpc": "2.0", "id": 4,
                    "error": {"code": -32602, "message": "no \\ud800"}}
    with pytest.raises(UnencodableMessageError):
        encode_answer(Notification("x", {"t": "\ud800"}))


def test_encoding_is_done_once_per_message():
    message = Response(1, {"a": 1})
    first = encode(message)
    assert encode(message) is first


# -- cursors ---------------------------------------------------------------------------


@pytest.mark.parametrize("cursor", [
    # int() refuses more than 4300 digits with a ValueError of its own
    base64.urlsafe_b64encode(b"mcpsync:" + b"9" * 5000).decode(),
    encode_cursor(10 ** 18),
    "x" * 1_000_000,
    "\ud800",
    "bWNwc3luYzrCsg==",  # "mcpsync:²": a digit to str.isdigit, not to us
    5, [1], {"a": 1},
])
def test_bad_cursors_are_invalid_params_and_quoted_briefly(cursor):
    with pytest.raises(InvalidParamsError) as info:
        decode_cursor(cursor)
    assert len(info.value.message) < 200


def test_good_cursors_round_trip():
    assert decode_cursor(encode_cursor(12345)) == 12345
    assert decode_cursor(None) == 0


@pytest.mark.parametrize("levels", [980, 985, 990, 995, 1000, 5000, 100_000])
@pytest.mark.parametrize("on_a_thread", [False, True])
def test_past_the_parser_depth_a_request_is_still_refused_with_its_id(levels, on_a_thread):
    # Near ~1000 levels json.loads gives up, a few levels sooner on some threads than on
    # others: the same line then got -32600 with its id or -32700 with id null depending
    # on the thread that read it. Now it is -32600 with the id, however deep.
    line = ('{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"s":"[[{\\"",'
            '"x":' + "[" * levels + "]" * levels + "}}")
    got: list = []
    if on_a_thread:
        import threading

        thread = threading.Thread(target=lambda: got.extend(decode(line)))
        thread.start()
        thread.join()
    else:
        got.extend(decode(line))
    [item] = got
    assert isinstance(item, Invalid) and item.reply is not None
    assert item.reply.id == "q" and item.reply.error["code"] == -32600


def test_past_the_parser_depth_batch_elements_are_still_judged_one_by_one():
    deep = '{"jsonrpc":"2.0","id":6,"method":"x","params":{"a":' + "[" * 3000 + "]" * 3000 + "}}"
    first, second = decode('[{"jsonrpc":"2.0","id":5,"method":"ping"},' + deep + "]")
    assert isinstance(first, Request) and first.id == 5
    assert isinstance(second, Invalid) and second.reply is not None and second.reply.id == 6


@pytest.mark.parametrize("text", ["[" * 5000, '{"a":' * 3000, "[" * 3000 + "}" * 3000 + "x"])
def test_past_the_parser_depth_what_is_not_json_is_a_parse_error(text):
    [item] = decode(text)
    assert isinstance(item, Invalid) and item.reply is not None
    assert item.reply.id is None and item.reply.error["code"] == -32700


def test_the_parser_never_descends_past_the_limit_so_code_run_meanwhile_has_its_stack():
    # The garbage collector runs in whichever thread allocates, with finalizers and gc
    # callbacks, in the middle of a parse. The C parser used to descend ~1000 levels into a
    # hostile line before giving up, so a finalizer run down there failed with
    # RecursionError (seen in CI as pytest's unraisable-exception hook failing too). Now the
    # nesting is measured before parsing, and the parser only sees what is within the limit.
    line = ('{"jsonrpc":"2.0","id":"q","method":"m","params":{"x":'
            + "[" * 5000 + "]" * 5000 + "}}")
    batch = "[" + line + "," + line.replace('"q"', '"r"') + "]"
    with stack_probe() as headroom:
        [item] = decode(line)
        first, second = decode(batch)
        assert isinstance(first, Invalid) and first.reply is not None
        with pytest.raises(ValueError, match="nested deeper than 64"):
            jsonrpc.loads(line)
    assert isinstance(item, Invalid) and item.reply is not None and item.reply.id == "q"
    assert isinstance(second, Invalid) and second.reply is not None and second.reply.id == "r"
    assert headroom and all(headroom), "code run during the parse ran out of stack"


def test_loads_reads_a_peers_json_with_the_same_bounds():
    assert jsonrpc.loads(b'{"error": {"code": -32600}}') == {"error": {"code": -32600}}
    assert jsonrpc.loads("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)
    for bad in ("[" * 65 + "]" * 65, "{", "NaN", b"\xff"):
        with pytest.raises(ValueError):
            jsonrpc.loads(bad)


@pytest.mark.parametrize("tail", ['\\"', '"', "\\", '[\\"'])
def test_refusing_a_deep_line_is_linear_in_its_length(tail):
    # A deep line followed by text full of quotes and backslashes that never closes a
    # string: the scan for strings used to restart at every quote and run to the end of the
    # line (80 kB took 18 s, 1 MB hours). A liveness bound, not a timing: linear is ~10 ms.
    import subprocess
    import sys

    code = ("from mcpsync.protocol.jsonrpc import decode\n"
            f"[item] = decode(b'[' * 2000 + {tail.encode()!r} * 400_000)\n"
            "print(item.reply.error['code'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "-32700", done.stderr
