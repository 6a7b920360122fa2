"""The cheapest correct MCP server, for measuring clients: canned answers, no SDK.

    python floor.py                     # stdio
    gunicorn -k gthread floor:app       # HTTP (Streamable HTTP, both eras)

It answers what a client sends on its way to calling a tool — ``server/discover``
(2026-07-28) or the ``initialize`` handshake, ``tools/list``, ``tools/call`` of ``echo``
(always the text "x"), ``ping`` — with fixed bytes and the request's id, and ignores
notifications. Over HTTP a handshake gets an ``Mcp-Session-Id``, a GET stream is refused
(405, which the spec allows), DELETE is accepted. So a client benchmark against it measures
the client, not the server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

_INFO = {"name": "floor", "version": "1"}
_META = {"io.modelcontextprotocol/serverInfo": _INFO}
_TOOL = {"name": "echo", "inputSchema": {"type": "object",
                                         "properties": {"text": {"type": "string"}},
                                         "required": ["text"]}}
_CAPS = {"tools": {}}
_RESULTS: dict[str, Any] = {
    "server/discover": {"supportedVersions": ["2026-07-28"], "capabilities": _CAPS,
                        "resultType": "complete", "_meta": _META, "ttlMs": 0,
                        "cacheScope": "public"},
    "tools/list": {"tools": [_TOOL], "resultType": "complete", "_meta": _META, "ttlMs": 0,
                   "cacheScope": "public"},
    "tools/call": {"content": [{"type": "text", "text": "x"}], "isError": False,
                   "resultType": "complete", "_meta": _META},
    "ping": {},
}
_LEGACY = "2025-11-25"


def _result(method: str, params: dict[str, Any]) -> Any:
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in ("2025-11-25", "2025-06-18", "2025-03-26") else _LEGACY
        return {"protocolVersion": version, "capabilities": _CAPS, "serverInfo": _INFO}
    return _RESULTS.get(method)


def answer(message: dict[str, Any]) -> bytes | None:
    """The JSON answer to ``message`` (``None`` for a notification or an answer)."""
    if "id" not in message or "method" not in message:
        return None
    result = _result(message["method"], message.get("params") or {})
    if result is None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "error": {
            "code": -32601, "message": f"Method not found: {message['method']}"}}
    else:
        body = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return json.dumps(body, separators=(",", ":")).encode()


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        reply = answer(json.loads(line))
        if reply is not None:
            out.write(reply + b"\n")
            out.flush()


def app(environ: dict[str, Any],
        start_response: Callable[[str, list[tuple[str, str]]], Any]) -> Iterable[bytes]:
    method = environ["REQUEST_METHOD"]
    if method == "DELETE":
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]
    if method != "POST":
        start_response("405 Method Not Allowed", [("Allow", "POST"), ("Content-Length", "0")])
        return [b""]
    message = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    reply = answer(message)
    if reply is None:
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(reply)))]
    if message.get("method") == "initialize":
        headers.append(("Mcp-Session-Id", "floor-session"))
    start_response("200 OK", headers)
    return [reply]


if __name__ == "__main__":
    main()
