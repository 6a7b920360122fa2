"""The session store contract: the record of a handshake-era session that any worker can
take up (:class:`SessionRecord`), the :class:`SessionStore` protocol, its optional shared
state (:class:`SharedSessionState`, declared in :class:`SessionStoreCapabilities`), and the
change methods written once over a store's read-modify-write (:class:`SessionChanges`).

Why sessions are stored at all, and what a record cannot carry, is told where the app
uses them: :mod:`mcpsync.http.session_store` (the file and memory stores).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from .changes import ReadModifyWrite

__all__ = ["SessionChange", "SessionChanges", "SessionRecord", "SessionStore",
           "SessionStoreCapabilities", "SharedSessionState"]


@dataclass(frozen=True)
class SessionRecord:
    """What another worker needs to serve a session it did not initialize."""

    session_id: str
    protocol_version: str
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    #: Who created it, as :func:`~mcpsync.dispatch.principal.principal_key` (``""``: no
    #: ``auth=``): another worker serves it only to the same principal.
    owner: str = ""
    #: ``logging/setLevel`` as the client last sent it (``None``: never).
    log_level: str | None = None
    #: The URIs of ``resources/subscribe`` still in force.
    subscriptions: frozenset[str] = frozenset()
    #: Seconds the stored record lives if nothing touches it (``None``: the store's
    #: ``idle_timeout``). The app saves a new session with its handshake timeout: until
    #: the client's second request (whose :meth:`SessionStore.touch` gives the record the
    #: idle timeout), a session that never completes its handshake must expire on every
    #: worker within seconds, not linger for the idle timeout. Not part of the record's
    #: content (not stored, not compared): how long it is kept.
    lifetime: float | None = field(default=None, compare=False)

    def to_json(self) -> str:
        return json.dumps({"sessionId": self.session_id, "protocolVersion": self.protocol_version,
                           "clientInfo": self.client_info,
                           "clientCapabilities": self.client_capabilities,
                           "owner": self.owner, "logLevel": self.log_level,
                           "subscriptions": sorted(self.subscriptions)})

    @classmethod
    def from_json(cls, text: str) -> SessionRecord | None:
        """The record in ``text``; ``None`` if it is not one (a torn or foreign file)."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        session_id, version = data.get("sessionId"), data.get("protocolVersion")
        info, capabilities = data.get("clientInfo"), data.get("clientCapabilities")
        owner, level = data.get("owner", ""), data.get("logLevel")
        subscriptions = data.get("subscriptions") or []
        if not isinstance(session_id, str) or not isinstance(version, str) or not isinstance(
                owner, str):
            return None
        return cls(session_id, version, info if isinstance(info, dict) else None,
                   capabilities if isinstance(capabilities, dict) else {}, owner,
                   level if isinstance(level, str) else None,
                   frozenset(u for u in subscriptions if isinstance(u, str))
                   if isinstance(subscriptions, list) else frozenset())


@runtime_checkable
class SessionStore(Protocol):
    """Shared session records. Implementations must be safe to call from many threads and,
    when shared, from many processes. A store declares what it can do beyond these four
    methods in :attr:`capabilities` (see :mod:`mcpsync.stores`)."""

    @property
    def capabilities(self) -> SessionStoreCapabilities:
        """The optional parts this store has."""
        ...

    def save(self, record: SessionRecord) -> None:
        """Write (or overwrite) the record of a session that has just been initialized;
        it expires ``record.lifetime`` seconds from now unless touched (``None``: the
        store's idle timeout). A store that ignores ``lifetime`` keeps a session whose
        client never came back after ``initialize`` for its whole idle timeout."""

    def load(self, session_id: str) -> SessionRecord | None:
        """The record of a live session; ``None`` if unknown, ended or expired."""

    def touch(self, session_id: str) -> bool:
        """Note that the session is in use: it expires the idle timeout from now (whatever
        ``lifetime`` it was saved with); ``False`` if it no longer exists."""

    def delete(self, session_id: str) -> bool:
        """End the session everywhere; ``True`` if it existed."""


@runtime_checkable
class SharedSessionState(Protocol):
    """What a session changes after ``initialize`` that every worker must see: its log
    level and its resource subscriptions. A :class:`SessionStore` that also has these
    methods, and declares so (:attr:`SessionStoreCapabilities.shared_state`), lets a
    deployment without sticky routing serve ``logging/setLevel`` and
    ``resources/subscribe`` on any worker (with a bus between the workers, see
    :mod:`mcpsync.http.bus`); without them those stay on the worker that received them.
    Each change is atomic on its own (two workers subscribing at once lose neither), and a
    change to a session that does not exist is ignored. Raise
    :class:`~mcpsync.errors.StoreUnavailableError` when the store cannot be reached."""

    def set_log_level(self, session_id: str, level: str) -> None:
        """Record the session's ``logging/setLevel``."""

    def add_subscription(self, session_id: str, uri: str) -> None:
        """Record ``resources/subscribe`` of ``uri``."""

    def remove_subscription(self, session_id: str, uri: str) -> None:
        """Record ``resources/unsubscribe`` of ``uri``."""

    def subscribers(self, uri: str) -> set[str]:
        """The ids of the live sessions subscribed to ``uri``."""


#: A change to a session's record, as :class:`SessionChanges` describes one.
SessionChange = Callable[[SessionRecord], SessionRecord]


@dataclass(frozen=True)
class SessionStoreCapabilities:
    """What a :class:`SessionStore` can do beyond the protocol, as it declares it in its
    ``capabilities``: each part is the store seen as that capability, or ``None``."""

    #: Log levels and subscriptions every worker sees (without it they stay on the
    #: worker that received them).
    shared_state: SharedSessionState | None = None


class SessionChanges(ReadModifyWrite[SessionChange, None]):
    """The three :class:`SharedSessionState` changes, over the one read-modify-write
    ``_change(session_id, change)`` that each store makes atomic its own way (a lock file,
    a lock). A change to a session that does not exist is ignored."""

    def set_log_level(self, session_id: str, level: str) -> None:
        self._change(session_id, lambda r: replace(r, log_level=level))

    def add_subscription(self, session_id: str, uri: str) -> None:
        self._change(session_id, lambda r: replace(r, subscriptions=r.subscriptions | {uri}))

    def remove_subscription(self, session_id: str, uri: str) -> None:
        self._change(session_id, lambda r: replace(r, subscriptions=r.subscriptions - {uri}))
