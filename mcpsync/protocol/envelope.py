"""The one check of a 2026-07-28 request's envelope: its ``_meta`` and, on HTTP, the
headers that mirror it (sans-IO, pure).

A stateless request carries its version, client capabilities, client info and log level
in ``params._meta``; on Streamable HTTP it also carries ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*``, which must agree with the body.
:func:`check_envelope` validates all of it at once and answers an :class:`Envelope` (what
the request is served with) or raises the spec's error: -32602 for a missing or invalid
``_meta`` field, -32022 for a version this server does not speak, -32020 for a header that
disagrees with the body. Each request is checked once: an HTTP request where it enters
(``http/modern.py``, before any thread or middleware is spent on it), any other
(stdio, memory) where it is served (``server/stateless.py``), which takes the envelope
already checked when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION, InvalidParamsError, MCPError
from . import levels
from .http_headers import PROTOCOL_VERSION, body_mismatch
from .versions import META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION

_VERSION_HEADER = PROTOCOL_VERSION.lower()


class Envelope(NamedTuple):
    """What a valid envelope says: the request's version, the capabilities the client
    declared on it, its client info (``None`` when absent or not an object) and the log
    level it opted in to (``None``: no log messages). Immutable; a tuple rather than a
    frozen dataclass because one is made per request (a third of the cost)."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None


def check_envelope(method: str, params: Mapping[str, Any], supported: tuple[str, ...], *,
                   headers: Mapping[str, str] | None = None,
                   tool_headers: dict[str, tuple[str, ...]] | None = None) -> Envelope:
    """Validate the envelope of request ``method`` with ``params`` for a server that
    speaks the stateless ``supported`` revisions. ``headers`` (lower-cased names): the
    HTTP request's, checked against the body (``None`` off HTTP); ``tool_headers``: the
    ``x-mcp-header`` map of the tool a ``tools/call`` names. Raises
    :class:`~mcpsync.errors.MCPError` with the spec's code."""
    meta = params.get("_meta")
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(version, str):
        raise InvalidParamsError(f"Invalid params: _meta[{META_VERSION!r}] is required and "
                                 "must be a string")
    capabilities = meta.get(META_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise InvalidParamsError(f"Invalid params: _meta[{META_CAPABILITIES!r}] is required "
                                 "and must be an object")
    if headers is not None:
        header_version = headers.get(_VERSION_HEADER)
        if header_version != version:
            text = ("the MCP-Protocol-Version header is required" if header_version is None
                    else f"MCP-Protocol-Version header value {header_version!r} does not "
                         f"match body value {version!r}")
            raise MCPError(f"Header mismatch: {text}", code=HEADER_MISMATCH)
        problem = body_mismatch(headers, method, params, tool_headers)
        if problem is not None:
            raise MCPError(f"Header mismatch: {problem}", code=HEADER_MISMATCH)
    if version not in supported:
        raise MCPError(f"Unsupported protocol version: {version}",
                       code=UNSUPPORTED_PROTOCOL_VERSION,
                       data={"supported": list(supported), "requested": version})
    log_level = meta.get(META_LOG_LEVEL)
    if log_level is not None and not levels.is_level(log_level):
        raise InvalidParamsError(f"Invalid params: unknown log level {log_level!r}")
    client_info = meta.get(META_CLIENT_INFO)
    return Envelope(version, capabilities,
                    client_info if isinstance(client_info, dict) else None, log_level)


__all__ = ["Envelope", "check_envelope"]
