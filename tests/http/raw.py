"""Raw-HTTP helpers shared by the HTTP tests: envelopes, headers, an SSE reader, and a
hand-driven handshake-era session."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import requests

from tests.helpers import WAIT

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
BOTH = "application/json, text/event-stream"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
#: Every blocking wait in these tests is bounded by this (seconds).

# -- raw HTTP helpers ---------------------------------------------------------------------


def envelope(version: str = MODERN, capabilities: dict[str, Any] | None = None,
             **extra: Any) -> dict[str, Any]:
    meta = {META_VERSION: version, META_CAPS: {} if capabilities is None else capabilities,
            META_INFO: {"name": "raw-test", "version": "0"}}
    meta.update(extra)
    return meta


def modern_request(method: str, params: dict[str, Any] | None = None, request_id: Any = 1,
                   meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = envelope() if meta is None else meta
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def modern_headers(method: str, name: str | None = None, version: str = MODERN,
                   **extra: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": BOTH,
               "MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    headers.update(extra)
    return headers


def post_modern(url: str, method: str, params: dict[str, Any] | None = None, *,
                request_id: Any = 1, name: str | None = None,
                headers: dict[str, str] | None = None, **kwargs: Any) -> requests.Response:
    """POST a well-formed 2026-07-28 request (``Mcp-Name`` derived unless given)."""
    if name is None and params is not None:
        name = params.get("uri") if method == "resources/read" else params.get("name")
    all_headers = modern_headers(method, name)
    all_headers.update(headers or {})
    body = modern_request(method, params, request_id)
    return requests.post(url, data=json.dumps(body), headers=all_headers, timeout=WAIT,
                         **kwargs)


class SseReader:
    """Read SSE events off a streaming ``requests`` response: an independent, minimal
    reader (LF-terminated lines, as the server writes them)."""

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self._buffer = b""
        # A response not made with stream=True has its body read already (requests reads
        # it whole): read that. Which one a test gets is the server's choice (a JSON answer
        # within its json_window, else SSE), so a reader that only knew the raw stream saw
        # an empty one whenever a loaded machine made the answer late.
        self._chunks: Iterator[bytes] = (
            iter([response.content]) if getattr(response, "_content_consumed", False)
            else response.raw.stream(1024, decode_content=True))

    def next_event(self) -> dict[str, Any] | None:
        """The next event as ``{"event", "id", "retry", "data"}`` (data joined), ``None``
        at the end of the stream. Comments are skipped."""
        while True:
            while b"\n\n" not in self._buffer:
                try:
                    chunk = next(self._chunks)
                except StopIteration:
                    return None
                self._buffer += chunk.replace(b"\r\n", b"\n")
            raw, self._buffer = self._buffer.split(b"\n\n", 1)
            fields: dict[str, Any] = {}
            data: list[str] = []
            for line in raw.decode("utf-8").split("\n"):
                if not line or line.startswith(":"):
                    continue
                key, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if key == "data":
                    data.append(value)
                else:
                    fields[key] = value
            if not fields and not data:
                continue  # a keep-alive comment
            fields["data"] = "\n".join(data) if data else None
            return fields

    def messages(self, until_id: Any = None) -> list[dict[str, Any]]:
        """JSON-RPC messages of the stream until the response to ``until_id`` (or the end)."""
        out: list[dict[str, Any]] = []
        while True:
            event = self.next_event()
            if event is None:
                return out
            if not event.get("data") or not event["data"].strip():
                continue
            message = json.loads(event["data"])
            out.append(message)
            if until_id is not None and message.get("id") == until_id and (
                    "result" in message or "error" in message):
                return out


def sse_messages(response: requests.Response, until_id: Any = None) -> list[dict[str, Any]]:
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return SseReader(response).messages(until_id)


def answer_of(response: requests.Response, request_id: Any = 1) -> dict[str, Any]:
    """The JSON-RPC response to ``request_id``, whether the body is JSON or SSE."""
    content_type = response.headers.get("Content-Type", "")
    if content_type.startswith("text/event-stream"):
        messages = sse_messages(response, request_id)
        assert messages, "empty SSE stream"
        return messages[-1]
    assert content_type.startswith("application/json"), content_type
    body: dict[str, Any] = response.json()
    return body


class LegacySession:
    """A raw handshake-era session: initialize, then POSTs with its Mcp-Session-Id."""

    def __init__(self, url: str, version: str = LEGACY,
                 capabilities: dict[str, Any] | None = None) -> None:
        self.url = url
        self.version = version
        self._ids = itertools.count(100)
        response = requests.post(url, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": capabilities or {},
                       "clientInfo": {"name": "raw", "version": "0"}}},
            headers={"Accept": BOTH}, timeout=WAIT)
        assert response.status_code == 200, response.text
        self.init_response = response
        self.init_result = answer_of(response, 0)
        self.session_id = response.headers["Mcp-Session-Id"]
        reply = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert reply.status_code == 202, reply.text

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": BOTH,
                   "Mcp-Session-Id": self.session_id}
        if self.version >= "2025-06-18":
            headers["MCP-Protocol-Version"] = self.version
        headers.update(extra)
        return headers

    def post(self, body: Any, **kwargs: Any) -> requests.Response:
        headers = self.headers(**kwargs.pop("headers", {}))
        return requests.post(self.url, data=json.dumps(body), headers=headers, timeout=WAIT,
                             **kwargs)

    def request(self, method: str, params: dict[str, Any] | None = None,
                **kwargs: Any) -> tuple[Any, requests.Response]:
        request_id = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        return request_id, self.post(body, **kwargs)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id, response = self.request(method, params)
        assert response.status_code == 200, response.text
        return answer_of(response, request_id)

    def get(self, **kwargs: Any) -> requests.Response:
        headers = self.headers(Accept="text/event-stream", **kwargs.pop("headers", {}))
        del headers["Content-Type"]
        return requests.get(self.url, headers=headers, stream=True, timeout=WAIT, **kwargs)

    def delete(self) -> requests.Response:
        return requests.delete(self.url, headers=self.headers(), timeout=WAIT)
