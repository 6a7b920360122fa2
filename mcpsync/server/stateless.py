"""The 2026-07-28 ("modern") era on the server: each request carries its own envelope.

A request whose ``params._meta`` names ``io.modelcontextprotocol/protocolVersion`` is served
statelessly: its version, client capabilities and log level come from that request alone,
never from earlier ones. Every result carries ``resultType`` and ``serverInfo``; cacheable
results carry ``ttlMs``/``cacheScope``. The same registered handlers serve both eras.

Not yet here: MRTR (``InputRequiredResult``) and ``subscriptions/listen``. Until then a
handler's reverse request (``ctx.elicit`` and friends) under this era raises
:class:`~mcpsync.errors.ProtocolStateError`, which a tool reports as an ``isError`` result.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final

from ..dispatch.context import HandlerContext, SessionInfo
from ..engine.connection import Connection, InboundRequest
from ..errors import (
    UNSUPPORTED_PROTOCOL_VERSION,
    InvalidParamsError,
    MCPError,
    MethodNotFoundError,
    ProtocolStateError,
)
from ..protocol import levels
from ..protocol.jsonrpc import RequestId

if TYPE_CHECKING:
    from .session import ServerSession

META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

#: Methods that exist only in the handshake era (answered -32601 here).
REMOVED_METHODS: Final = frozenset({
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
    "tasks/result", "tasks/list",
})
#: Results that carry caching hints.
CACHEABLE_METHODS: Final = frozenset({
    "server/discover", "tools/list", "prompts/list", "resources/list",
    "resources/templates/list", "resources/read",
})


def is_stateless(params: dict[str, Any]) -> bool:
    """Whether a request carries the modern per-request envelope."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_VERSION in meta


class _NoReverseRequests:
    """The connection as a stateless handler sees it: notifications yes, requests no."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def notify(self, method: str, params: dict[str, Any] | None = None, *,
               related_request_id: RequestId | None = None) -> None:
        self._connection.notify(method, params, related_request_id=related_request_id)

    def request(self, method: str, params: dict[str, Any] | None = None,
                **options: Any) -> dict[str, Any]:
        raise ProtocolStateError(
            f"cannot send {method}: in 2026-07-28 a server sends no requests to the client "
            "(multi round-trip requests are not supported by mcpsync yet)"
        )


class RequestScope:
    """The SessionHandle of one stateless request."""

    def __init__(self, session: ServerSession, info: SessionInfo, log_level: str | None):
        self._session = session
        self._info = info
        self._log_level = log_level
        self._connection = _NoReverseRequests(session.connection)

    @property
    def info(self) -> SessionInfo:
        return self._info

    @property
    def connection(self) -> Connection:
        return self._connection  # type: ignore[return-value]

    @property
    def ended(self) -> threading.Event:
        return self._session.ended

    def log_enabled(self, level: str) -> bool:
        # Without a logLevel in its _meta, a request gets no log messages at all.
        return self._log_level is not None and levels.at_least(level, self._log_level)


def serve(session: ServerSession, inbound: InboundRequest) -> dict[str, Any]:
    """Validate the envelope, run the handler, decorate the result."""
    server = session.server
    params = inbound.params
    meta = params["_meta"]
    version = meta.get(META_VERSION)
    if not isinstance(version, str):
        raise InvalidParamsError(f"Invalid params: _meta[{META_VERSION!r}] must be a string")
    if version not in server.modern_versions:
        raise MCPError(f"Unsupported protocol version: {version}",
                       code=UNSUPPORTED_PROTOCOL_VERSION,
                       data={"supported": list(server.modern_versions), "requested": version})
    capabilities = meta.get(META_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise InvalidParamsError(
            f"Invalid params: _meta[{META_CAPABILITIES!r}] is required and must be an object")
    client_info = meta.get(META_CLIENT_INFO)
    log_level = meta.get(META_LOG_LEVEL)
    if log_level is not None and not levels.is_level(log_level):
        raise InvalidParamsError(f"Invalid params: unknown log level {log_level!r}")
    method = inbound.method
    if method in REMOVED_METHODS:
        raise MethodNotFoundError(f"Method not found: {method} does not exist in {version}",
                                  data={"method": method})
    info = SessionInfo(protocol_version=version,
                       client_info=client_info if isinstance(client_info, dict) else None,
                       client_capabilities=capabilities)
    if method == "server/discover":
        result: dict[str, Any] = {
            "supportedVersions": list(server.modern_versions),
            "capabilities": server.capabilities_for(version),
        }
        if server.instructions:
            result["instructions"] = server.instructions
    else:
        handler = server.method_handlers.get(method)
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
        ctx = HandlerContext(inbound, RequestScope(session, info, log_level))
        result = dict(handler(ctx, params))
    result["resultType"] = "complete"
    result_meta = dict(result.get("_meta") or {})
    result_meta[META_SERVER_INFO] = server.info_for(version)
    result["_meta"] = result_meta
    if method in CACHEABLE_METHODS:
        result.setdefault("ttlMs", server.cache_ttl_ms)
        result.setdefault("cacheScope", server.cache_scope)
    return result
