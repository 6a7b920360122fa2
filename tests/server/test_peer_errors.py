"""A client's error answer to a server's reverse call (elicitation, sampling, roots).

Bridges such as supergateway answer every server request ``-32601 Method not found``. That
error belongs to the reverse call, not to the ``tools/call`` that made it: the tool's
result is ``isError`` naming it, a prompt or resource read is answered -32603, and a
handler can catch it as :class:`mcpsync.PeerRequestError`. Memory and stdio here; HTTP in
``tests/http/test_peer_errors_http.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, HostHandlers, MCPError, MethodNotFoundError, ProtocolStateError
from tests.server.peer_error_server import server

LEGACY = "2025-11-25"
ROOT = Path(__file__).resolve().parents[2]


def refuse(*_: Any) -> Any:
    raise MethodNotFoundError("Method not found")


REFUSING = HostHandlers(elicitation=refuse, sampling=refuse, roots=refuse)


def check(client: Client) -> None:
    for tool, method in (("ask", "elicitation/create"), ("think", "sampling/createMessage"),
                         ("where", "roots/list")):
        result = client.call_tool(tool)
        assert result.is_error, (tool, result)
        assert method in result.text and "-32601" in result.text, result.text
    assert client.call_tool("ask_or_guess").text == "guessed (elicitation/create -> -32601)"
    assert client.call_tool("ask_detached").text == "detached: roots/list -> -32601"
    for call in (lambda: client.get_prompt("greet"), lambda: client.read_resource("ask://name")):
        with pytest.raises(MCPError) as caught:
            call()
        assert caught.value.code == -32603
        assert "elicitation/create" in caught.value.message
    client.ping()  # the session is fine


def test_memory():
    with Client.memory(server, protocol_version=LEGACY, host=REFUSING) as client:
        check(client)


def test_stdio():
    command = [sys.executable, "-m", "tests.server.peer_error_server"]
    with Client.stdio(command, cwd=ROOT, protocol_version=LEGACY, host=REFUSING) as client:
        check(client)


def test_modern_era_questions_fail_on_the_client_not_as_a_tool_error():
    # 2026-07-28 has no error answer to an input request: the client's refusal ends the
    # call on the client, naming the host handler's error; the server sees no error.
    with (Client.memory(server, protocol_version="2026-07-28", host=REFUSING) as client,
          pytest.raises(ProtocolStateError, match="Method not found")):
        client.call_tool("ask")
