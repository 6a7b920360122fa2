"""JSON nested deeper than Python's stack is bad input like any other: a parse error, on
every transport, never an exception that kills the thread reading it."""

from __future__ import annotations

import sys
import textwrap

from mcpsync import Client
from mcpsync.protocol import jsonrpc
from mcpsync.protocol.jsonrpc import Invalid

DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000
WAIT = 10.0


def test_decode_reports_a_parse_error():
    [item] = jsonrpc.decode(DEEP)
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
            sys.stdout.write('{"a":' * 100000 + "1" + "}" * 100000 + "\\n")
            answer(message["id"], {"content": [{"type": "text", "text": "still here"}]})
""")


def test_a_stdio_client_survives_a_deep_line():
    with Client.stdio([sys.executable, "-c", SERVER], protocol_version="2025-11-25",
                      timeout=WAIT) as client:
        assert client.call_tool("any").text == "still here"
