"""How a :class:`~mcpsync.Client` settles the protocol era with its server.

With ``protocol_version="auto"`` (the default of ``Client.http``) the client probes with
``server/discover`` (2026-07-28) and falls back to the ``initialize`` handshake when the
server does not answer it in a form it can read; with a 2026-07-28 revision it only
discovers (retrying once with a revision from the server's ``supported`` list); with a
handshake revision it only does the handshake. :class:`Negotiation` owns the outcome (the
revision, the 2026-07-28 envelope every request carries, what the server said, the log
level) and never sees the ``Client``, which composes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..codec import from_wire, to_wire
from ..engine.connection import Connection
from ..errors import (
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosedError,
    MCPError,
    ProtocolStateError,
    RequestTimeoutError,
    TransportError,
)
from ..protocol import levels
from ..protocol.deadline import Deadline
from ..protocol.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_VERSION,
    MODERN_VERSIONS,
    features,
)
from ..types import Implementation, InitializeResult
from .calls import budget, left
from .task_calls import with_extension

#: The longest a ``protocol_version="auto"`` probe waits for ``server/discover`` (seconds):
#: a handshake-only server may not answer it at all.
PROBE_TIMEOUT = 5.0


class NotAnMCPServerError(ProtocolStateError):
    """The peer answered, but not as an MCP server does: it does not know ``initialize``
    (``cat``, which echoes our request back, makes our own client answer it "Method not
    found", and echoes that back too). ``detail`` says what it answered; the command line
    puts the program's name before it."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"the server is not an MCP server: {detail}")
        self.detail = detail


class Negotiation:
    """The era settled with one server, and what it said. Written while connecting (by
    the one thread that connects) and by :meth:`set_logging_level`; read by every call.
    The envelope is replaced, never changed in place, so readers use it unlocked."""

    def __init__(self, connection: Connection, *, requested_version: str,
                 client_info: Implementation, capabilities: Callable[[], dict[str, Any]],
                 log_level: str | None, logs_wanted: bool,
                 timeout: Callable[[], float]) -> None:
        self._connection = connection
        #: The revision asked for (``"auto"`` until the probe settles it).
        self.requested_version = requested_version
        self._client_info = client_info
        self._capabilities = capabilities
        self._timeout = timeout
        #: What the client asked for; the level sent in 2026-07-28 is :attr:`log_level`.
        self._log_level_asked = log_level
        #: Without a level a 2026-07-28 server sends no logs at all, so with a log handler
        #: it defaults to "debug" (the handshake era's servers send every level).
        self.log_level: str | None = log_level or ("debug" if logs_wanted else None)
        #: The per-request ``_meta`` envelope when speaking 2026-07-28, else ``None``.
        self.envelope: dict[str, Any] | None = None
        #: What ``initialize`` (or ``server/discover``) said; None until connected.
        self.init: InitializeResult | None = None

    def connect(self) -> None:
        """Settle the era and say hello: ``server/discover`` (2026-07-28; with ``"auto"``
        a probe that falls back) or the ``initialize`` handshake. The client's ``timeout``
        bounds the whole of it, every request included."""
        deadline = budget(None, self._timeout(), "connecting")
        if self.requested_version == "auto":
            # Probe with server/discover; a handshake-only server answers with some error
            # (or nothing), and then the handshake follows. Never keyed on one error code.
            self.requested_version = MODERN_VERSIONS[0]
            try:
                if self._discover_negotiated(deadline, probe=True):
                    return
            except MCPError as exc:
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                    raise  # a modern server that speaks none of our revisions
                if isinstance(exc, TransportError):
                    # An HTTP 401/403 (mcpsync.auth's UnauthorizedError,
                    # InsufficientScopeError: both kinds at once): the token was refused,
                    # whatever the era; the handshake would be refused the same way.
                    raise
            except ConnectionClosedError:
                raise  # nobody there: the handshake would fail the same way
            except (RequestTimeoutError, ProtocolStateError, TransportError):
                pass  # no answer we can read: try the handshake
            self.envelope = None
            self.requested_version = LATEST_LEGACY
        if features(self.requested_version).era == "modern":
            if not self._discover_negotiated(deadline):
                raise ProtocolStateError(
                    f"the server does not speak {self.requested_version}; it asks for the "
                    "handshake era (connect with protocol_version='auto' or a handshake "
                    "version)")
            return
        self._handshake(deadline)

    def _handshake(self, deadline: Deadline) -> None:
        params = {
            "protocolVersion": self.requested_version,
            "capabilities": with_extension(self._capabilities()),
            "clientInfo": to_wire(self._client_info),
        }
        try:
            raw = self._connection.request("initialize", params, timeout=left(deadline))
        except MCPError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            raise NotAnMCPServerError(
                f"it answered initialize with {exc.message!r} (every MCP server of the "
                f"handshake era knows it; a program that echoes what it reads, such as cat, "
                f"answers so)") from exc
        result = from_wire(InitializeResult, raw)
        if result.protocol_version not in LEGACY_VERSIONS:
            raise ProtocolStateError(
                f"server chose protocol {result.protocol_version!r}, which mcpsync does not "
                f"speak (it speaks {', '.join(LEGACY_VERSIONS)})"
            )
        self.init = result
        self._connection.protocol_version = result.protocol_version
        self._connection.notify("notifications/initialized")
        self.log_level = self._log_level_asked  # the handshake era's servers default to all
        if self._log_level_asked is not None and "logging" in result.capabilities:
            # The handshake era's form of the level every 2026-07-28 request carries.
            self._connection.request("logging/setLevel", {"level": self._log_level_asked},
                                     timeout=left(deadline))

    def _discover_negotiated(self, deadline: Deadline, *, probe: bool = False) -> bool:
        """``server/discover``, retried once with a revision from the server's
        ``supported`` list when it refuses ours. False when that list names only
        handshake-era revisions. A ``probe`` (the server may not speak this era at all)
        waits at most :data:`PROBE_TIMEOUT`, and half of what is left, for each answer: the
        handshake after it keeps the other half."""
        for attempt in range(2):
            try:
                cap = min(PROBE_TIMEOUT, deadline.remaining() / 2) if probe else None
                self._discover(timeout=left(deadline, cap))
                return True
            except MCPError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or attempt:
                    raise
                data = exc.data if isinstance(exc.data, dict) else {}
                supported = [v for v in data.get("supported") or () if isinstance(v, str)]
                modern = [v for v in MODERN_VERSIONS if v in supported]
                if modern:
                    self.requested_version = modern[0]
                    continue
                if any(v in LEGACY_VERSIONS for v in supported):
                    return False
                raise
        return False

    def _discover(self, timeout: float | None = None) -> None:
        """2026-07-28: no handshake; ``server/discover`` tells who the server is."""
        version = self.requested_version
        caps = with_extension(self._capabilities())
        if "roots" in caps:
            caps["roots"] = {}  # roots.listChanged does not exist in this era
        envelope: dict[str, Any] = {
            META_VERSION: version,
            META_CAPABILITIES: caps,
            META_CLIENT_INFO: to_wire(self._client_info),
        }
        if self.log_level is not None:
            envelope[META_LOG_LEVEL] = self.log_level
        self.envelope = envelope
        raw = self._connection.request("server/discover", {"_meta": dict(envelope)},
                                       timeout=timeout)
        supported = raw.get("supportedVersions")
        if not isinstance(supported, list) or version not in supported:
            raise ProtocolStateError(
                f"server does not support {version} (it supports {supported!r})")
        meta = raw.get("_meta") or {}
        info = meta.get(META_SERVER_INFO) or {"name": "", "version": ""}
        self.init = from_wire(InitializeResult, {
            "protocolVersion": version, "serverInfo": info,
            "capabilities": raw.get("capabilities") or {},
            **({"instructions": raw["instructions"]} if raw.get("instructions") else {}),
        })

    def set_logging_level(self, level: str, timeout: float | None) -> None:
        """Handshake era: ``logging/setLevel`` (the server's answer, or error, is raised).
        2026-07-28: ``level`` becomes the ``logLevel`` of every request from now on."""
        envelope = self.envelope
        if envelope is None:
            self._connection.request("logging/setLevel", {"level": level}, timeout=timeout)
            self.log_level = level
            return
        if not levels.is_level(level):
            raise ValueError(f"log level {level!r} is not one of {levels.LEVELS}")
        self.log_level = level
        # A new dict, never one mutated in place: other threads copy the envelope unlocked.
        self.envelope = {**envelope, META_LOG_LEVEL: level}
