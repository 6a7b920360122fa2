"""Issue #11 in the engine: a message that cannot be encoded fails that message only, and
malformed params from the peer never become tracebacks in the reader."""

from __future__ import annotations

import logging
import math
import threading

import pytest

from mcpsync.errors import MCPError, UnencodableMessageError
from mcpsync.protocol.jsonrpc import Request

from .test_connection import WAIT


@pytest.mark.parametrize("result", [{"t": "\ud800"}, {"n": math.nan}, {"o": object()}])
def test_unencodable_result_becomes_an_internal_error_answer(pairs, result):
    # (A tool's result, one with a "content" list, becomes an isError result instead:
    # see test_unencodable_tool_result_becomes_an_is_error_result.)
    p = pairs(lambda r: result)
    with pytest.raises(MCPError) as info:
        p.a.request("x", timeout=WAIT)
    assert info.value.code == -32603
    with pytest.raises(MCPError):  # and again: the connection lives
        p.a.request("x", timeout=WAIT)
    assert not p.b.closed and not p.a.closed


def test_unencodable_error_keeps_its_code(pairs):
    def handler(r):
        raise MCPError("no such thing: \ud800", code=-32602, data={"bad": math.inf})

    p = pairs(handler)
    with pytest.raises(MCPError) as info:
        p.a.request("x", timeout=WAIT)
    assert info.value.code == -32602 and info.value.message == "no such thing: \\ud800"
    assert not p.b.closed


def test_surrogate_ids_are_answered_even_when_duplicated(pairs):
    started, release = threading.Event(), threading.Event()

    def handler(r):
        if r.method == "wait":
            started.set()
            release.wait(WAIT)
        return {"ok": True}

    p = pairs(handler)
    assert p.a.request("ping", timeout=WAIT) == {"ok": True}
    _, first = p.a.begin_request("wait", request_id="\ud800")
    assert started.wait(WAIT)
    # The same id again while it is in flight: -32600 for that id (the encode error of the
    # surrogate id used to be taken for a dead transport, ending the connection).
    p.a.transport.send(Request("\ud800", "ping"))
    with pytest.raises(MCPError) as info:
        first.result(WAIT)
    assert info.value.code == -32600
    release.set()
    assert p.a.request("ping", timeout=WAIT) == {"ok": True}
    assert not p.b.closed and not p.a.closed


def test_unencodable_notification_and_request_raise_to_their_sender(pairs):
    p = pairs(lambda r: {"ok": True})
    with pytest.raises(UnencodableMessageError):
        p.b.notify("notifications/message", {"level": "info", "data": "\ud800"})
    with pytest.raises(UnencodableMessageError):
        p.a.request("x", {"bad": math.nan}, timeout=WAIT)
    assert p.a.pending_count == 0
    assert p.a.request("x", timeout=WAIT) == {"ok": True}
    assert not p.a.closed and not p.b.closed


@pytest.mark.parametrize("token", [[1], {"a": 1}, None, True, 1.5])
def test_progress_with_a_malformed_token_is_ignored_quietly(pairs, caplog, token):
    p = pairs(lambda r: {"ok": True})
    with caplog.at_level(logging.WARNING, logger="mcpsync"):
        p.b.notify("notifications/progress", {"progressToken": token, "progress": 1})
        assert p.a.request("x", timeout=WAIT) == {"ok": True}  # after the notification
    assert not [r for r in caplog.records if r.exc_info]


def test_unencodable_tool_result_becomes_an_is_error_result(pairs):
    p = pairs(lambda r: {"content": [{"type": "text", "text": "\ud800"}],
                         "resultType": "complete"})
    result = p.a.request("tools/call", timeout=WAIT)
    assert result["isError"] is True and result["resultType"] == "complete"
    assert "surrogate" in result["content"][0]["text"]
