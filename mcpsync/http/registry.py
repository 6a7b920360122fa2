"""The live handshake-era HTTP sessions of one app, by id.

:class:`SessionRegistry` creates each :class:`~mcpsync.http.sessions.HttpSession` at
``initialize``, finds it again for every later request of its client (and only for the
principal that made it), and ends it at ``DELETE``, at idle expiry, or when its client
never came back after ``initialize``. With a shared :class:`SessionStore` it also takes up
a session another worker initialized, and with a relay it ends a session on every worker
at once and sends ``notifications/resources/updated`` to subscribers held anywhere. Kept
apart from :mod:`mcpsync.http.sessions` (what one session is) because this is the
bookkeeping over all of them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from ..dispatch.principal import principal_key
from ..engine.pool import WorkerPool
from ..errors import StoreUnavailableError
from ..protocol import jsonrpc
from ..protocol.jsonrpc import Notification
from ..protocol.versions import features
from .events import EventStore
from .relay import Relay, cursor_key, standalone_key
from .session_store import SessionRecord, SessionStore, SharedSessionState
from .sessions import HttpSession, key_prefix

if TYPE_CHECKING:
    from ..server.server import Server

logger = logging.getLogger("mcpsync.http")

#: How often (seconds) a worker asks the shared session store whether a session it holds
#: still exists (a DELETE on another worker ends it here within this time).
CONFIRM_INTERVAL = 10.0


class SessionRegistry:
    """Live sessions by id, with idle expiry; with a :class:`SessionStore`, also those
    another worker initialized. Thread-safe."""

    def __init__(self, server: Server, store: EventStore | None, *, idle_timeout: float,
                 max_sessions: int, session_store: SessionStore | None = None,
                 handshake_timeout: float = 10.0, pool: WorkerPool | None = None,
                 relay: Relay | None = None) -> None:
        self.server = server
        #: With a bus between the workers (see :mod:`mcpsync.http.relay`).
        self.relay = relay
        if relay is not None:
            relay.sessions = self
        self.shared: SharedSessionState | None = (
            session_store if isinstance(session_store, SharedSessionState) else None)
        self.store = store
        self.session_store = session_store
        self.idle_timeout = idle_timeout
        #: Seconds a session may wait for its client's second request (normally
        #: ``notifications/initialized``, sent at once) before it is dropped: one client
        #: cannot hold the ``max_sessions`` slots for ``idle_timeout`` with bare initializes.
        self.handshake_timeout = handshake_timeout
        self.pool = pool
        self.max_sessions = max_sessions
        self._sessions: dict[str, HttpSession] = {}
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def create(self, *, legacy_sse: bool = False, priming: bool = False,
               owner: Any = None) -> HttpSession | None:
        self.sweep()
        with self._lock:
            full = len(self._sessions) >= self.max_sessions
        if full:  # sweep now, not at the next second: half-open sessions may have lapsed
            self.sweep(force=True)
            with self._lock:
                if len(self._sessions) >= self.max_sessions:
                    return None
        session = HttpSession(self.server, self.store, legacy_sse=legacy_sse, priming=priming,
                              pool=self.pool, owner=owner, relay=self.relay,
                              shared=self.shared)
        with self._lock:
            self._sessions[session.id] = session
        return session

    def initialized(self, session: HttpSession) -> None:
        """``initialize`` was answered: write the session down for the other workers."""
        version = session.protocol_version
        if self.session_store is None or version is None:
            return
        info = session.server_session.info
        record = SessionRecord(session.id, version, info.client_info,
                               dict(info.client_capabilities or {}),
                               owner=principal_key(session.owner))
        try:
            self.session_store.save(record)
        except StoreUnavailableError:
            # A deployment that shares sessions (Redis) must not hand out one that only this
            # worker knows: its next request, on another worker, would be a 404. A 503: the
            # client tries again once the store is back.
            raise
        except OSError as exc:  # the session still works here, only not on other workers
            logger.warning("could not write HTTP session %s… to the session store: %s",
                           session.id[:6], exc)

    def get(self, session_id: str, owner: Any = None) -> HttpSession | None:
        """The live session ``session_id`` if ``owner`` (the request's principal) made
        it: a session is bound to its creator, so another token cannot use it (it gets the
        same 404 as for an unknown id, which tells it nothing)."""
        self.sweep()
        with self._lock:
            session = self._sessions.get(session_id)
        if session is not None and session.owner != owner:
            return None
        if session is not None and not session.ended.is_set():
            session.established = True
            return self._confirmed(session)
        if session is None and self.session_store is not None:
            return self._restore(session_id, owner)
        return None

    def _confirmed(self, session: HttpSession) -> HttpSession | None:
        """``session``, unless the shared store says it was ended elsewhere."""
        if self.session_store is None:
            return session
        now = time.monotonic()
        if now - session.confirmed < CONFIRM_INTERVAL:
            return session
        session.confirmed = now
        try:
            alive = self.session_store.touch(session.id)
        except OSError as exc:  # the store is unwell: keep serving what this worker holds
            logger.warning("session store touch failed: %s", exc)
            alive = True
        if alive:
            return session
        with self._lock:
            if self._sessions.get(session.id) is session:
                del self._sessions[session.id]
        session.close()
        return None

    def _restore(self, session_id: str, owner: Any = None) -> HttpSession | None:
        """Take up a session another worker initialized, from its stored record."""
        assert self.session_store is not None
        try:
            record = self.session_store.load(session_id)
        except StoreUnavailableError:
            raise  # the store is down, not the session gone: 503, and the client retries
        except OSError as exc:
            logger.warning("session store load failed: %s", exc)
            return None
        if record is None or record.protocol_version not in self.server.legacy_versions:
            return None
        if record.owner != principal_key(owner):  # another principal's: it does not exist
            return None
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                return None
        priming = self.store is not None and features(record.protocol_version).sse_polling
        session = HttpSession(self.server, self.store, session_id=record.session_id,
                              priming=priming, pool=self.pool, owner=owner, relay=self.relay,
                              shared=self.shared)
        session.established = True
        session.server_session.restore(record.protocol_version, record.client_info,
                                       record.client_capabilities)
        _apply_shared_state(session, record)
        with self._lock:
            existing = self._sessions.get(session_id)
            if existing is None:
                self._sessions[session_id] = session
        if existing is not None:  # another thread restored it first
            session.close()
            return existing
        logger.info("HTTP session %s… taken up from the session store", session_id[:6])
        return session

    def held(self, session_id: str) -> HttpSession | None:
        """The session if this worker holds it now (never taken up from the store)."""
        with self._lock:
            session = self._sessions.get(session_id)
        return session if session is not None and not session.ended.is_set() else None

    def end_here(self, session_id: str) -> None:
        """Another worker ended the session (``DELETE``): let go of it here at once."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is not None:
            logger.info("HTTP session %s… ended on another worker", session_id[:6])
            session.close()

    def remove(self, session_id: str, owner: Any = None) -> bool:
        """End a session (DELETE): here, and in the shared store for every worker. Only
        its ``owner`` may (see :meth:`get`)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and session.owner != owner:
                return False
            session = self._sessions.pop(session_id, None)
        stored = False
        if session is None and self.session_store is not None:
            try:  # only its owner may end a session held elsewhere, too
                record = self.session_store.load(session_id)
            except StoreUnavailableError:
                raise
            except OSError as exc:
                logger.warning("session store load failed: %s", exc)
                return False
            if record is None or record.owner != principal_key(owner):
                return False
        if self.session_store is not None:
            try:
                stored = self.session_store.delete(session_id)
            except OSError as exc:
                logger.warning("session store delete failed: %s", exc)
        if self.relay is not None and (session is not None or stored):
            self._end_everywhere(session_id)
        if session is None:
            return stored
        session.close()
        return True

    def resource_updated(self, uri: str) -> None:
        """Relay with shared session state (``Server.notify_resource_updated`` on this
        worker): ``notifications/resources/updated`` to every session subscribed to
        ``uri``, once each, wherever it is held. A session held here sends it (through its
        send middleware); for another, the event goes straight to its GET stream's key."""
        assert self.relay is not None and self.shared is not None and self.store is not None
        try:
            subscribers = self.shared.subscribers(uri)
        except Exception as exc:
            logger.warning("relay: the subscribers of %r could not be read: %s", uri, exc)
            return
        message = Notification("notifications/resources/updated", {"uri": uri})
        for session_id in subscribers:
            session = self.held(session_id)
            try:
                if session is not None:
                    session.server_session.notify(message.method, message.params)
                    continue
                key = standalone_key(key_prefix(session_id))
                self.store.store_event(key, jsonrpc.encode(message))
                self.relay.ring(session_id, key)
            except Exception as exc:  # one session's failure must not stop the others
                logger.warning("relay: resources/updated for session %s… not sent: %s",
                               session_id[:6], exc)

    def _end_everywhere(self, session_id: str) -> None:
        """Relay: the other holders end the session now (not at their next check of the
        store), and the events of its standalone stream go."""
        assert self.relay is not None
        forget = getattr(self.store, "forget", None)
        if forget is not None:
            try:
                forget(standalone_key(key_prefix(session_id)))
                forget(cursor_key(key_prefix(session_id)))
            except OSError as exc:  # the store is down: its age bound drops them
                logger.warning("event store: a session's GET stream not forgotten: %s", exc)
            except Exception:
                logger.exception("event store: forgetting a session's GET stream failed")
        try:
            self.relay.publish("end", session_id)
        except OSError as exc:  # the store says it is gone: they see it within a check
            logger.warning("relay: the end of session %s… not published: %s",
                           session_id[:6], exc)

    def sweep(self, force: bool = False) -> None:
        """Close sessions idle longer than ``idle_timeout``, and those whose client did not
        come back within ``handshake_timeout`` of ``initialize`` (at most once a second)."""
        now = time.monotonic()
        with self._lock:
            if not force and now < self._next_sweep:
                return
            self._next_sweep = now + 1.0
            expired = [s for s in self._sessions.values()
                       if s.ended.is_set() or (
                           (now - s.last_seen > self.idle_timeout or (
                               not s.established and not s.legacy_sse
                               and now - s.created > self.handshake_timeout))
                           and not s.busy())]
            for session in expired:
                del self._sessions[session.id]
        for session in expired:
            logger.info("HTTP session %s… expired", session.id[:6])
            session.close()

    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def _apply_shared_state(session: HttpSession, record: SessionRecord) -> None:
    """A session taken up from its record gets the log level and subscriptions the client
    set on other workers."""
    server_session = session.server_session
    if record.log_level is not None:
        try:
            server_session.set_log_level(record.log_level)
        except Exception as exc:  # a level this version does not know: keep the default
            logger.warning("session %s…: stored log level not applied: %s",
                           session.id[:6], exc)
    if session.relay is None or session.shared is None:
        for uri in record.subscriptions:  # (with both, the app sends from the store's list)
            server_session.subscribe(uri)
