"""Helpers for testing code that uses mcpsync: a server answered by a script, and a client
connected to a :class:`~mcpsync.Server` in either protocol era.

A real :class:`~mcpsync.Server` behind :meth:`Client.memory <mcpsync.Client.memory>` is the
usual way to test (and :mod:`mcpsync.pytest_plugin` gives it to pytest as the ``mcp_client``
fixture). :class:`ScriptedServer` is for what a real Server never does: an answer shaped by
hand (an odd result, a cache hint, several questions in one round, an error code) to see
how the client, or your code on top of it, copes. It speaks over an in-memory transport,
so no process or socket is involved.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import MCPError
from .protocol.jsonrpc import ErrorResponse, Notification, Request, Response
from .protocol.versions import LATEST_LEGACY, MODERN_VERSIONS
from .transports.memory import memory_pair

if TYPE_CHECKING:
    from .client import Client
    from .facade import Server

#: The protocol eras a server should be tested in: the stateless 2026-07-28 and the
#: newest handshake revision.
ERAS: tuple[str, ...] = (MODERN_VERSIONS[0], LATEST_LEGACY)

#: ``script(method, params) -> result``: the result dict of each request (``_meta`` and the
#: era's bookkeeping are added). Raising :class:`~mcpsync.errors.MCPError` answers with
#: that error.
Script = Callable[[str, dict[str, Any]], dict[str, Any]]

_names = itertools.count()


class ScriptedServer:
    """A server whose every answer comes from ``script``, recording what the client sent.

    It answers ``server/discover`` (2026-07-28) and ``initialize`` (the handshake) itself,
    with ``capabilities``, so that a :class:`~mcpsync.Client` connects in either era; every
    other request goes to ``script``. ``check(message)`` (optional) sees each request in
    wire shape first, e.g. to validate it against the spec's schema.

    ::

        def script(method, params):
            if method == "tools/call":
                return {"content": [{"type": "text", "text": "scripted"}]}
            raise MCPError("not scripted", code=-32601)

        with ScriptedServer(script) as scripted, scripted.client() as client:
            assert client.call_tool("anything").text == "scripted"
        assert scripted.sent("tools/call")[0]["params"]["name"] == "anything"

    The server runs on one named thread, ended and joined by :meth:`close`. What it records
    is bounded by ``max_recorded`` requests (the oldest are forgotten).
    """

    def __init__(self, script: Script, *, capabilities: dict[str, Any] | None = None,
                 name: str = "scripted", check: Callable[[dict[str, Any]], None] | None = None,
                 max_recorded: int = 10_000) -> None:
        self.script = script
        self.capabilities = {"tools": {}} if capabilities is None else capabilities
        self.name = name
        self._check = check
        self._max_recorded = max_recorded
        self.requests: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        #: The client's end: pass it to ``Client(...)``, or use :meth:`client`.
        self.client_end, self._end = memory_pair()
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name=f"mcpsync-scripted-{next(_names)}")
        self._thread.start()

    def _serve(self) -> None:
        while (message := self._end.receive()) is not None:
            if isinstance(message, Notification):
                self._record(self.notifications, message.to_wire())
                continue
            if not isinstance(message, Request):
                continue
            wire = message.to_wire()
            if self._check is not None:
                self._check(wire)
            self._record(self.requests, wire)
            try:
                answer: Response | ErrorResponse = Response(
                    message.id, self._answer(message.method, message.params or {}))
            except MCPError as exc:
                answer = ErrorResponse(message.id, exc.to_wire())
            self._end.send(answer)

    def _record(self, into: list[dict[str, Any]], wire: dict[str, Any]) -> None:
        with self._lock:
            into.append(wire)
            del into[:-self._max_recorded]

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        info = {"name": self.name, "version": "1"}
        if method == "server/discover":
            return {"resultType": "complete", "supportedVersions": list(MODERN_VERSIONS),
                    "capabilities": self.capabilities, "ttlMs": 0, "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {"protocolVersion": asked if isinstance(asked, str) else LATEST_LEGACY,
                    "capabilities": self.capabilities, "serverInfo": info}
        result = dict(self.script(method, params))
        if "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {}):
            meta = dict(result.get("_meta") or {})
            meta.setdefault("io.modelcontextprotocol/serverInfo", info)
            result["_meta"] = meta
        return result

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The requests (wire shape) the client sent for ``method``, in order."""
        with self._lock:
            return [r for r in self.requests if r["method"] == method]

    def client(self, *, protocol_version: str = MODERN_VERSIONS[0],
               **options: Any) -> Client:
        """A :class:`~mcpsync.Client` connected to this server (``timeout`` 5 s unless
        given)."""
        from .client import Client

        options.setdefault("timeout", 5.0)
        return Client(self.client_end, protocol_version=protocol_version, **options)

    def close(self, timeout: float = 5.0) -> None:
        """Stop answering and join the server's thread (bounded)."""
        self._end.close()
        self._thread.join(timeout)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def connect(server: Server, protocol_version: str = LATEST_LEGACY,
            **options: Any) -> Iterator[Client]:
    """A client of ``server`` in this process, speaking ``protocol_version`` (one of
    :data:`ERAS`, or any revision), closed at the end of the ``with``."""
    from .client import Client

    with Client.memory(server, protocol_version=protocol_version, **options) as client:
        yield client


__all__ = ["ERAS", "Script", "ScriptedServer", "connect"]
