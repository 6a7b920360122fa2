"""A recorder for what a server puts on the wire, for validation against the spec."""

from __future__ import annotations

import threading
from typing import Any

from mcpsync.protocol.jsonrpc import ErrorResponse, Message, Request, Response


class WireRecorder:
    """Middleware pair: remembers every message the server receives and sends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent: list[dict[str, Any]] = []
        self.methods: dict[Any, str] = {}

    def recv(self, message: Message, next_: Any) -> None:
        if isinstance(message, Request):
            with self._lock:
                self.methods[message.id] = message.method
        next_(message)

    def send(self, message: Message, next_: Any) -> None:
        with self._lock:
            self.sent.append(message.to_wire())
        next_(message)

    def install(self, server: Any) -> WireRecorder:
        server.recv_middleware.append(self.recv)
        server.send_middleware.append(self.send)
        return self

    def pairs(self) -> list[tuple[dict[str, Any], str | None]]:
        """Each sent message with the method of the request it answers (if it is a response)."""
        with self._lock:
            out = []
            for wire in self.sent:
                method = self.methods.get(wire.get("id")) if (
                    "result" in wire or "error" in wire) else None
                out.append((wire, method))
            return out


__all__ = ["ErrorResponse", "Response", "WireRecorder"]
