"""What one :class:`~mcpsync.auth.OAuth` object knows per MCP server, and who is
authorizing each one now.

A :class:`ServerState` is kept per server origin: its token, the resource it was issued
for, the scopes asked for so far, the client registration per issuer and the authorization
server's metadata. :class:`Servers` holds them, bounded (:data:`MAX_SERVERS`), loads a
record from the token storage on first use and saves it after every change.

It also runs each server's authorizations one at a time (:meth:`Servers.single_flight`):
the first thread to need one runs it *without holding any lock* (the redirect handler and
the token storage are user code); the others wait for its outcome (at most
``flight_timeout`` seconds), then use whatever token it obtained, or fail with its error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from .discovery import ServerMetadata
from .errors import AuthorizationError
from .registration import ClientInfo
from .tokens import Token, TokenStorage

#: Servers (origins) one OAuth object keeps in memory; the least recently added go first
#: (their records stay in the storage and are loaded again when needed).
MAX_SERVERS: Final = 1024


@dataclass
class ServerState:
    """What the client knows about one MCP server (by origin). Mutated only by the thread
    running that server's flight; other threads only read ``token`` (one reference)."""

    token: Token | None = None
    resource: str | None = None
    clients: dict[str, ClientInfo] = field(default_factory=dict)
    requested: list[str] = field(default_factory=list)
    metadata: ServerMetadata | None = None

    def to_record(self) -> dict[str, Any]:
        # A DPoP-bound token is useless without the in-memory key: it is not stored.
        keep = self.token is not None and self.token.token_type.lower() != "dpop"
        return {"token": self.token.to_record() if self.token and keep else None,
                "resource": self.resource, "requested": list(self.requested),
                "clients": {issuer: c.to_record() for issuer, c in self.clients.items()}}

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> ServerState:
        if not isinstance(record, dict):
            return cls()
        clients: dict[str, ClientInfo] = {}
        raw_clients = record.get("clients")
        if isinstance(raw_clients, dict):
            for issuer, raw in raw_clients.items():
                info = ClientInfo.from_record(raw)
                if info is not None:
                    clients[str(issuer)] = info
        requested = record.get("requested")
        resource = record.get("resource")
        return cls(Token.from_record(record.get("token")),
                   resource if isinstance(resource, str) else None, clients,
                   [s for s in requested if isinstance(s, str)]
                   if isinstance(requested, list) else [])


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


class Servers:
    """The :class:`ServerState` of every server one OAuth object talks to, and the
    authorization running for each. Thread-safe; never calls the storage or ``work`` while
    holding its lock."""

    def __init__(self, storage: TokenStorage, flight_timeout: float) -> None:
        self.storage = storage
        self.flight_timeout = flight_timeout
        self._lock = threading.Lock()
        self._servers: dict[str, ServerState] = {}
        self._flights: dict[str, _Flight] = {}

    def get(self, key: str) -> ServerState:
        """The state of the server at origin ``key``, loaded from the storage if needed."""
        with self._lock:
            server = self._servers.get(key)
        if server is not None:
            return server
        loaded = ServerState.from_record(self.storage.load(key))  # user code: outside the lock
        with self._lock:
            server = self._servers.setdefault(key, loaded)
            while len(self._servers) > MAX_SERVERS:
                oldest = next(k for k in self._servers if k not in self._flights or k == key)
                if oldest == key:
                    break
                del self._servers[oldest]
            return server

    def save(self, key: str) -> None:
        self.storage.save(key, self.get(key).to_record())

    def single_flight(self, key: str, stale: str | None, work: Callable[[], None]) -> None:
        """Run ``work`` for ``key`` unless another thread already replaced the ``stale``
        token or is running it now (then wait for that one's outcome)."""
        server = self.get(key)
        with self._lock:
            current = server.token.access_token if server.token else None
            if current is not None and current != stale:
                return  # someone else already authorized since this request was sent
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
        if not leader:
            if not flight.done.wait(self.flight_timeout):
                raise AuthorizationError(f"gave up waiting {self.flight_timeout} s for "
                                         f"another thread's authorization of {key}")
            if flight.error is not None:
                error = flight.error
                raise type(error)(str(error)) if isinstance(error, AuthorizationError) else (
                    AuthorizationError(f"the authorization of {key} failed: {error}"))
            return
        try:
            work()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                self._flights.pop(key, None)
            flight.done.set()
