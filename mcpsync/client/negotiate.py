"""How a :class:`~mcpsync.Client` settles the protocol era with its server.

With ``protocol_version="auto"`` (the default of ``Client.http``) the client probes with
``server/discover`` (2026-07-28) and falls back to the ``initialize`` handshake when the
server does not answer it in a form it can read; with a 2026-07-28 revision it only
discovers (retrying once with a revision from the server's ``supported`` list); with a
handshake revision it only does the handshake. Apart from ``client.py`` so that the class
there reads as the API, and the era logic can be read in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..codec import from_wire, to_wire
from ..errors import (
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosedError,
    MCPError,
    ProtocolStateError,
    RequestTimeoutError,
    TransportError,
)
from ..protocol.envelope import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_VERSION,
)
from ..protocol.versions import LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSIONS, features
from ..types import InitializeResult
from .tasks import with_extension

if TYPE_CHECKING:
    from .client import Client


def initialize(client: Client) -> None:
    """Settle the era and say hello: ``server/discover`` (2026-07-28; with ``"auto"`` a
    probe that falls back) or the ``initialize`` handshake. Fills ``client._init``."""
    if client.requested_version == "auto":
        # Probe with server/discover; a handshake-only server answers with some error
        # (or nothing), and then the handshake follows. Never keyed on one error code.
        client.requested_version = MODERN_VERSIONS[0]
        try:
            if _discover_negotiated(client, timeout=min(client.timeout, 5.0)):
                return
        except MCPError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                raise  # a modern server that speaks none of our revisions
        except ConnectionClosedError:
            raise  # nobody there: the handshake would fail the same way
        except (RequestTimeoutError, ProtocolStateError, TransportError):
            pass  # no answer we can read: try the handshake
        client._envelope = None
        client.requested_version = LATEST_LEGACY
    if features(client.requested_version).era == "modern":
        if not _discover_negotiated(client):
            raise ProtocolStateError(
                f"the server does not speak {client.requested_version}; it asks for the "
                "handshake era (connect with protocol_version='auto' or a handshake "
                "version)")
        return
    params = {
        "protocolVersion": client.requested_version,
        "capabilities": with_extension(client.capabilities()),
        "clientInfo": to_wire(client.client_info),
    }
    raw = client._connection.request("initialize", params)
    result = from_wire(InitializeResult, raw)
    if result.protocol_version not in LEGACY_VERSIONS:
        raise ProtocolStateError(
            f"server chose protocol {result.protocol_version!r}, which mcpsync does not "
            f"speak (it speaks {', '.join(LEGACY_VERSIONS)})"
        )
    client._init = result
    client._connection.notify("notifications/initialized")
    client._log_level = client._log_level_asked  # the handshake era's servers default to all
    if client._log_level_asked is not None and "logging" in result.capabilities:
        # The handshake era's form of the level every 2026-07-28 request carries.
        client._connection.request("logging/setLevel", {"level": client._log_level_asked})


def _discover_negotiated(client: Client, timeout: float | None = None) -> bool:
    """``server/discover``, retried once with a revision from the server's
    ``supported`` list when it refuses ours. False when that list names only
    handshake-era revisions."""
    for attempt in range(2):
        try:
            discover(client, timeout=timeout)
            return True
        except MCPError as exc:
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION or attempt:
                raise
            data = exc.data if isinstance(exc.data, dict) else {}
            supported = [v for v in data.get("supported") or () if isinstance(v, str)]
            modern = [v for v in MODERN_VERSIONS if v in supported]
            if modern:
                client.requested_version = modern[0]
                continue
            if any(v in LEGACY_VERSIONS for v in supported):
                return False
            raise
    return False


def discover(client: Client, timeout: float | None = None) -> None:
    """2026-07-28: no handshake; ``server/discover`` tells who the server is."""
    version = client.requested_version
    caps = with_extension(client.capabilities())
    if "roots" in caps:
        caps["roots"] = {}  # roots.listChanged does not exist in this era
    client._envelope = {
        META_VERSION: version,
        META_CAPABILITIES: caps,
        META_CLIENT_INFO: to_wire(client.client_info),
    }
    if client._log_level is not None:
        client._envelope[META_LOG_LEVEL] = client._log_level
    raw = client.request("server/discover", timeout=timeout)
    supported = raw.get("supportedVersions")
    if not isinstance(supported, list) or version not in supported:
        raise ProtocolStateError(
            f"server does not support {version} (it supports {supported!r})")
    meta = raw.get("_meta") or {}
    info = meta.get(META_SERVER_INFO) or {"name": "", "version": ""}
    client._init = from_wire(InitializeResult, {
        "protocolVersion": version, "serverInfo": info,
        "capabilities": raw.get("capabilities") or {},
        **({"instructions": raw["instructions"]} if raw.get("instructions") else {}),
    })
