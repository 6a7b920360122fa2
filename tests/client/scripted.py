"""A scripted 2026-07-28 server on a raw memory transport: for answers a real Server never
gives (several questions in one round, cache hints on a retry)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcpsync import Client
from mcpsync.protocol.jsonrpc import Request, Response
from mcpsync.transports.memory import memory_pair
from tests.spec import validate_message

MODERN = "2026-07-28"
INFO = {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}

Script = Callable[[str, dict[str, Any]], dict[str, Any]]


class Scripted:
    """Answers each request with ``script(method, params)``; records what arrived."""

    def __init__(self, script: Script, *, capabilities: dict[str, Any] | None = None) -> None:
        self.script = script
        self.capabilities = {"tools": {}} if capabilities is None else capabilities
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.client_end, self._end = memory_pair()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (message := self._end.receive()) is not None:
            if not isinstance(message, Request):
                continue
            wire = message.to_wire()
            validate_message(MODERN, wire)
            with self._lock:
                self.requests.append(wire)
            if message.method == "server/discover":
                result = {"resultType": "complete", "supportedVersions": [MODERN],
                          "capabilities": self.capabilities, "ttlMs": 0, "cacheScope": "public",
                          "_meta": INFO}
            else:
                result = {"_meta": INFO, **self.script(message.method, message.params or {})}
            self._end.send(Response(message.id, result))

    def sent(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["method"] == method]

    def client(self, **options: Any) -> Client:
        return Client(self.client_end, protocol_version=MODERN, timeout=5, **options)

    def close(self) -> None:
        self._end.close()
