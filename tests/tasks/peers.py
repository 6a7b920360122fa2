"""A raw client end for the task tests, on every transport and in both eras.

``Peer(kind, era)`` talks JSON-RPC as dicts to ``tests.tasks.task_server``: in memory, to a
stdio subprocess, or over HTTP (a real socket). ``era="modern"`` puts the 2026-07-28
envelope on each request; ``era="legacy"`` runs the ``initialize`` handshake first. Server
requests (v1 questions) are answered by ``answer(method, params)`` and recorded.
"""

from __future__ import annotations

import itertools
import json
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

import requests

from mcpsync import Server
from mcpsync.protocol.jsonrpc import ErrorResponse, Notification, Request, Response
from mcpsync.transports.memory import memory_pair
from mcpsync.transports.subprocess import SubprocessTransport
from tests.helpers import WAIT
from tests.http.raw import BOTH, answer_of, envelope
from tests.serving import RunningServer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
EXT = "io.modelcontextprotocol/tasks"
V2_CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {},
                           "extensions": {EXT: {}}}
PLAIN_CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
Answer = Callable[[str, dict[str, Any]], dict[str, Any] | None]
_NAME_FIELD = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId",
               "tasks/cancel": "taskId"}


class Peer:
    """One client of the task server. ``request`` returns the reply as a wire dict."""

    def __init__(self, kind: str, era: str, capabilities: dict[str, Any] | None = None, *,
                 server: Server | None = None, http: RunningServer | None = None,
                 version: str | None = None, answer: Answer | None = None) -> None:
        self.kind = kind
        self.era = era
        self.version = version or (MODERN if era == "modern" else LEGACY)
        self.capabilities = V2_CAPS if capabilities is None else capabilities
        self.answer = answer
        self.server_requests: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._replies: dict[Any, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._transport: Any = None
        self._session_id: str | None = None
        self._session: Any = None
        if kind == "memory":
            from tests.tasks.task_server import server as default

            client, end = memory_pair()
            self._session = (server or default).connect(end, name="task-test")
            self._transport = client
        elif kind == "stdio":
            self._transport = SubprocessTransport(
                [sys.executable, "-m", "tests.tasks.task_server"])
        elif kind == "http":
            assert http is not None
            self.url = http.base + "/mcp"
        else:
            raise ValueError(kind)
        if self._transport is not None:
            self._reader = threading.Thread(target=self._read, name="task-test-reader",
                                            daemon=True)
            self._reader.start()
        if era == "legacy":
            self._initialize()

    # -- transports ----------------------------------------------------------------------

    def _read(self) -> None:
        while True:
            message = self._transport.receive()
            if message is None:
                return
            wire = message.to_wire()
            if isinstance(message, Request):
                self.server_requests.append(wire)
                # Answered on its own thread: an answer may wait on the test, which may
                # itself be waiting for a reply this reader must deliver.
                threading.Thread(target=self._reply, args=(message,), daemon=True,
                                 name="task-test-answer").start()
            elif isinstance(message, Notification):
                self.notifications.append(wire)
            else:
                with self._lock:
                    box = self._replies.get(wire.get("id"))
                if box is not None:
                    box.put(wire)

    def _reply(self, message: Request) -> None:
        result = self.answer(message.method, message.params or {}) if self.answer else None
        if result is None:
            self._transport.send(ErrorResponse(message.id, {
                "code": -32601, "message": f"no answer for {message.method}"}))
        else:
            self._transport.send(Response(message.id, result))

    def _initialize(self) -> None:
        params = {"protocolVersion": self.version, "capabilities": self.capabilities,
                  "clientInfo": {"name": "task-test", "version": "0"}}
        if self.kind == "http":
            response = requests.post(self.url, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
                headers={"Accept": BOTH}, timeout=WAIT)
            assert response.status_code == 200, response.text
            self.init_result = answer_of(response, 0)["result"]
            self._session_id = response.headers["Mcp-Session-Id"]
            self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        else:
            self.init_result = self.request("initialize", params)["result"]
            self._transport.send(Notification("notifications/initialized", None))

    def _post(self, body: dict[str, Any], headers: dict[str, str] | None = None
              ) -> requests.Response:
        all_headers = {"Content-Type": "application/json", "Accept": BOTH,
                       "MCP-Protocol-Version": self.version}
        if self._session_id is not None:
            all_headers["Mcp-Session-Id"] = self._session_id
        if self.era == "modern":
            all_headers["Mcp-Method"] = body["method"]
            field = _NAME_FIELD.get(body["method"])
            value = (body.get("params") or {}).get(field) if field else None
            if isinstance(value, str):
                all_headers["Mcp-Name"] = value
        all_headers.update(headers or {})
        return requests.post(self.url, data=json.dumps(body), headers=all_headers,
                             timeout=WAIT)

    # -- requests ------------------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                meta: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None) -> dict[str, Any]:
        """Send a request; its reply (``{"result": ...}`` or ``{"error": ...}``)."""
        params = dict(params or {})
        if self.era == "modern":
            params["_meta"] = {**envelope(self.version, self.capabilities), **(meta or {})}
        elif meta:
            params["_meta"] = meta
        request_id = next(self._ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        if self.kind == "http":
            response = self._post(body, headers)
            if response.status_code == 202:
                raise AssertionError(f"{method}: no answer (202)")
            return answer_of(response, request_id)
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._replies[request_id] = box
        try:
            self._transport.send(Request(request_id, method, params))
            return box.get(timeout=WAIT)
        finally:
            with self._lock:
                del self._replies[request_id]

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting for its reply (memory and stdio); its id."""
        params = dict(params or {})
        if self.era == "modern":
            params["_meta"] = {**envelope(self.version, self.capabilities),
                               **(params.get("_meta") or {})}
        request_id = next(self._ids)
        self._transport.send(Request(request_id, method, params))
        return request_id

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._transport.send(Notification(method, params))

    def result(self, method: str, params: dict[str, Any] | None = None,
               **options: Any) -> dict[str, Any]:
        reply = self.request(method, params, **options)
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    def error(self, method: str, params: dict[str, Any] | None = None,
              **options: Any) -> dict[str, Any]:
        reply = self.request(method, params, **options)
        assert "error" in reply, reply
        error: dict[str, Any] = reply["error"]
        return error

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        if self._session is not None:
            self._session.close()
