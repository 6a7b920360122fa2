"""Two hostile inputs a client controls, on every transport (memory, a real stdio
subprocess, real HTTP in both eras), since both are refused in the one place each goes
through (``jsonrpc.decode``, ``UriTemplate.match``):

* a request nested far past the limit is answered -32600 with its id, and the JSON parser
  never descends far enough to starve what the garbage collector runs meanwhile;
* a URI built to make a backtracking regex try every split between a template's
  variables is answered "not found" at once, and the template still matches what it should.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import Client, MCPError
from mcpsync.protocol.jsonrpc import ErrorResponse, Notification, Request, Response
from mcpsync.protocol.template_match import MAX_URI_CHARS
from mcpsync.transports.memory import MemoryTransport
from tests.helpers import WAIT, stack_probe
from tests.http.raw import LegacySession, modern_headers
from tests.serving import RunningServer

from .hostile_server import server

ROOT = Path(__file__).resolve().parents[2]
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
KINDS = ["memory", "stdio", "http-modern", "http-legacy"]

#: A tools/call whose arguments nest 5000 levels deep.
DEEP = (b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"headroom",'
        b'"arguments":{"x":' + b"[" * 5000 + b"]" * 5000 + b"}}}")
#: Fails to match pair://{a,b,c} only at its last character.
HOSTILE_URI = "pair://" + "," * (MAX_URI_CHARS - 8) + "/"


@pytest.fixture
def http_url() -> Iterator[str]:
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


def _deep_over_memory() -> dict[str, Any]:
    to_server: queue.SimpleQueue[object] = queue.SimpleQueue()
    to_client: queue.SimpleQueue[object] = queue.SimpleQueue()
    raw = MemoryTransport(to_client, to_server)
    session = server.connect(MemoryTransport(to_server, to_client))
    try:
        raw.send(Request(1, "initialize", {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}))
        assert isinstance(raw.receive(), Response)
        raw.send(Notification("notifications/initialized"))
        with stack_probe() as headroom:
            to_server.put(DEEP)  # the bytes a client sent, as the memory transport carries them
            answer = raw.receive()
        assert headroom and all(headroom), "code run during the parse ran out of stack"
        assert isinstance(answer, ErrorResponse)
        return {"id": answer.id, "error": answer.error}
    finally:
        session.close()
        raw.close()


def _deep_over_stdio() -> dict[str, Any]:
    # The probe runs inside the server process; its headroom tool reads it back.
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        DEEP,
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"headroom"}}',
    ]
    done = subprocess.run(
        [sys.executable, "-m", "tests.server.hostile_server"], cwd=ROOT,
        input=b"\n".join(lines) + b"\n", capture_output=True, timeout=WAIT,
        env={**os.environ, "MCPSYNC_STACK_PROBE": "1"})
    answers = {m.get("id"): m for m in map(json.loads, done.stdout.splitlines())}
    assert answers[2]["result"]["structuredContent"] == {"result": True}, answers[2]
    return answers["deep"]


def _deep_over_http(url: str, modern: bool) -> dict[str, Any]:
    headers = (modern_headers("tools/call", "headroom") if modern
               else LegacySession(url).headers())
    with stack_probe() as headroom:
        response = requests.post(url, data=DEEP, headers=headers, timeout=WAIT)
    assert headroom and all(headroom), "code run during the parse ran out of stack"
    assert response.status_code == 400, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_nested_far_too_deep_is_refused_with_its_id(kind: str, request) -> None:
    if kind == "memory":
        answer = _deep_over_memory()
    elif kind == "stdio":
        answer = _deep_over_stdio()
    else:
        answer = _deep_over_http(request.getfixturevalue("http_url"), kind == "http-modern")
    assert answer["id"] == "deep"
    assert answer["error"]["code"] == -32600
    assert "nested deeper than 64" in answer["error"]["message"]


def _client(kind: str, request) -> Client:
    if kind == "memory":
        return Client.memory(server, protocol_version=LEGACY, timeout=WAIT)
    if kind == "stdio":
        return Client.stdio([sys.executable, "-m", "tests.server.hostile_server"], cwd=ROOT,
                            protocol_version=LEGACY, timeout=WAIT)
    version = MODERN if kind == "http-modern" else LEGACY
    return Client.http(request.getfixturevalue("http_url"), protocol_version=version,
                       timeout=WAIT)


@pytest.mark.parametrize("kind", KINDS)
def test_a_uri_built_to_backtrack_is_not_found_at_once(kind: str, request) -> None:
    # With the old regex this URI never finished matching (cubic in its length, GIL held):
    # the call would wait for its deadline, and over HTTP in process hang the whole run.
    with _client(kind, request) as client:
        assert client.read_resource("pair://x,y,z").text == "x|y|z"
        with pytest.raises(MCPError) as info:
            client.read_resource(HOSTILE_URI)
        # "Resource not found" is -32602 from 2026-07-28 on, -32002 before.
        assert info.value.code == (-32602 if kind == "http-modern" else -32002), info.value
        assert "Resource not found" in str(info.value)
        assert client.read_resource("pair://a,b,c").text == "a|b|c"
