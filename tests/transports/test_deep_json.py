"""JSON nested deeper than Python's stack is bad input like any other: an error answer, on
every transport, never an exception that kills the thread reading it."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from mcpsync import Client, MCPError, TransportError
from mcpsync.protocol import jsonrpc
from mcpsync.protocol.jsonrpc import Invalid
from tests.helpers import WAIT

DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000


def test_decode_reports_an_invalid_message_not_an_exception():
    [item] = jsonrpc.decode(DEEP)  # valid JSON, no id, far too deep
    assert isinstance(item, Invalid)
    assert item.reply is not None and item.reply.error["code"] == -32600
    [item] = jsonrpc.decode(DEEP[:-1000])  # and cut short: not JSON
    assert isinstance(item, Invalid)
    assert item.reply is not None and item.reply.error["code"] == -32700


SERVER = textwrap.dedent("""
    import json, sys
    def answer(request_id, result):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))
        sys.stdout.write("\\n")
        sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            answer(message["id"], {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "serverInfo": {"name": "deep", "version": "1"}})
        elif message.get("method") == "tools/call":
            name = message["params"]["name"]
            if name == "noise":  # a line deeper than Python's stack, then the answer
                sys.stdout.write('{"a":' * 100000 + "1" + "}" * 100000 + "\\n")
            depth = 70 if name == "deep" else 1  # 70: past MAX_DEPTH, readable by json
            nested = json.loads("[" * depth + "]" * depth)
            answer(message["id"], {"content": [{"type": "text", "text": name}],
                                   "structuredContent": {"x": nested}})
""")


def test_a_stdio_client_survives_a_deep_line():
    with Client.stdio([sys.executable, "-c", SERVER], protocol_version="2025-11-25",
                      timeout=WAIT) as client:
        assert client.call_tool("noise").text == "noise"


def test_an_answer_too_deep_to_read_fails_its_call_at_once_as_a_local_failure():
    # Past MAX_DEPTH the answer is not read: that is our limit, not the server's refusal,
    # so the call fails with a TransportError (never an MCPError) and does not wait for
    # its deadline; the connection stays usable.
    with Client.stdio([sys.executable, "-c", SERVER],
                      protocol_version="2025-11-25", timeout=60) as client:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            client.call_tool("deep")
        assert not isinstance(info.value, MCPError)
        assert time.monotonic() - started < 30, "the call waited for its deadline"
        assert client.call_tool("shallow").text == "shallow"
