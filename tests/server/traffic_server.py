"""A server whose middleware records every message it receives and sends, with the
transport context it saw: the same definition served over stdio (as a subprocess that
appends its records to the file named by ``MCPSYNC_TRAFFIC_LOG``), memory and HTTP."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

from mcpsync import HandlerContext, ProtocolOptions, Server
from mcpsync.protocol.jsonrpc import ErrorResponse, Message, Notification, Request, Response
from mcpsync.protocol.versions import MODERN_VERSIONS

Record = Callable[[dict[str, Any]], None]


def _transport() -> dict[str, Any]:
    from mcpsync import current_transport

    seen = current_transport()
    if seen is None:
        return {"transport": None}
    return {"transport": seen.kind, "session": seen.session_id is not None,
            "reverse": seen.can_receive_requests, "agent": seen.headers.get("User-Agent")}


class Recorder:
    """Middleware pair: one record per message, in the order the middleware saw them."""

    def __init__(self, record: Record) -> None:
        self._record = record
        self._lock = threading.Lock()
        self._methods: dict[Any, str] = {}

    def recv(self, message: Message, next_: Callable[[Message], None]) -> None:
        entry: dict[str, Any] = {"dir": "recv"}
        if isinstance(message, Request):
            with self._lock:
                self._methods[message.id] = message.method
            entry.update(kind="request", method=message.method)
        elif isinstance(message, Notification):
            entry.update(kind="notification", method=message.method)
        else:
            entry.update(kind="answer", method=None)
        entry.update(_transport())
        self._record(entry)
        next_(message)

    def send(self, message: Message, next_: Callable[[Message], None]) -> None:
        entry: dict[str, Any] = {"dir": "send"}
        if isinstance(message, (Response, ErrorResponse)):
            with self._lock:
                method = self._methods.get(message.id)
            entry.update(kind="response" if isinstance(message, Response) else "error",
                         method=method)
        elif isinstance(message, Request):
            entry.update(kind="request", method=message.method)
        else:
            entry.update(kind="notification", method=message.method)
        entry.update(_transport())
        self._record(entry)
        next_(message)


def build(record: Record) -> Server:
    server = Server("traffic", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="traffic")
    recorder = Recorder(record)
    server.recv_middleware.append(recorder.recv)
    server.send_middleware.append(recorder.send)

    @server.tool()
    def work(steps: int, ctx: HandlerContext) -> str:
        """Report progress, then answer with what the handler knows of its transport."""
        for step in range(1, steps + 1):
            ctx.progress(step, steps)
        transport = ctx.transport
        return json.dumps({"kind": transport.kind, "session": transport.session_id,
                           "reverse": transport.can_receive_requests,
                           "remote": transport.remote_addr, "auth": ctx.auth,
                           "agent": transport.headers.get("user-agent")})

    @server.tool()
    def fail() -> str:
        """Always fails with a plain exception (an isError result)."""
        raise RuntimeError("no")

    return server


def _file_recorder(path: str) -> Record:
    lock = threading.Lock()

    def record(entry: dict[str, Any]) -> None:
        line = json.dumps(entry) + "\n"
        with lock, open(path, "a", encoding="utf-8") as out:
            out.write(line)

    return record


if __name__ == "__main__":
    build(_file_recorder(os.environ["MCPSYNC_TRAFFIC_LOG"])).run_stdio()
