"""The live handshake-era HTTP sessions of one app, by id.

:class:`SessionRegistry` creates each :class:`~mcpsync.http.sessions.HttpSession` at
``initialize``, finds it again for every later request of its client (and only for the
principal that made it), and ends it at ``DELETE``, at idle expiry, when its client
never came back after ``initialize``, or when the table is full and it is the one idle the
longest (:mod:`mcpsync.http.session_table`). With a shared :class:`SessionStore` it also takes up
a session another worker initialized, and with a relay it ends a session on every worker
at once and sends ``notifications/resources/updated`` to subscribers held anywhere. Kept
apart from :mod:`mcpsync.http.sessions` (what one session is) because this is the
bookkeeping over all of them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from ..dispatch.principal import Principal, principal_key
from ..engine.pool import WorkerPool
from ..errors import StoreUnavailableError
from ..protocol import jsonrpc
from ..protocol.jsonrpc import Notification
from ..protocol.versions import features
from ..stores.events import EventStore
from ..stores.sessions import SessionRecord, SessionStore, SharedSessionState
from .relay import Relay, cursor_key, standalone_key
from .session_table import SessionTable, SessionTableFull
from .sessions import HttpSession, key_prefix

if TYPE_CHECKING:
    from ..server.server import ServerCore

logger = logging.getLogger("mcpsync.http")

#: How often (seconds) a worker asks the shared session store whether a session it holds
#: still exists (a DELETE on another worker ends it here within this time).
CONFIRM_INTERVAL = 10.0
#: ``HttpSession.confirmed`` of a session whose record the store has not been told yet
#: that the handshake is complete: the next request touches it, whatever the interval.
_UNCONFIRMED = float("-inf")
#: ``HttpSession.confirmed`` of a session whose record could not be written: this worker
#: serves it alone, and never asks the store about it.
_NOT_SHARED = float("inf")


class SessionRegistry:
    """Live sessions by id, with idle expiry; with a :class:`SessionStore`, also those
    another worker initialized. Thread-safe."""

    def __init__(self, server: ServerCore, store: EventStore | None, *, idle_timeout: float,
                 max_sessions: int, session_store: SessionStore | None = None,
                 handshake_timeout: float = 10.0, pool: WorkerPool | None = None,
                 relay: Relay | None = None, max_per_principal: int | None = None,
                 max_per_address: int | None = None) -> None:
        self.server = server
        #: With a bus between the workers (see :mod:`mcpsync.http.relay`).
        self.relay = relay
        if relay is not None:
            relay.sessions = self
        self.shared: SharedSessionState | None = (
            None if session_store is None else session_store.capabilities.shared_state)
        self.store = store
        self.session_store = session_store
        self.idle_timeout = idle_timeout
        #: Seconds a session may wait for its client's second request (normally
        #: ``notifications/initialized``, sent at once) before it is dropped: one client
        #: cannot hold the ``max_sessions`` slots for ``idle_timeout`` with bare initializes.
        self.handshake_timeout = handshake_timeout
        self.pool = pool
        self.max_sessions = max_sessions
        self._table = SessionTable(max_sessions, per_principal=max_per_principal,
                                   per_address=max_per_address)
        self._lock = threading.Lock()
        self._next_sweep = 0.0
        self._quiet_until = 0.0

    def create(self, *, legacy_sse: bool = False, priming: bool = False,
               owner: Principal | None = None, address: str | None = None) -> HttpSession:
        """A new session of ``owner``, made from the remote ``address``, claimed for the
        request that makes it (:meth:`HttpSession.leave` when done: until then no other
        request's ``create`` can evict it, half-open as it is); a session idle the
        longest makes room if the table (or the owner's or address's cap) is full. Raises
        :class:`~mcpsync.http.session_table.SessionTableFull` when none can."""
        self.sweep()  # (no forced sweep when full: expired sessions are the first evicted)
        groups = self._table.groups(owner, address)
        session = HttpSession(self.server, self.store, legacy_sse=legacy_sse, priming=priming,
                              pool=self.pool, owner=owner, relay=self.relay,
                              shared=self.shared)
        session.claim()
        return self._admit(session, groups)

    def _admit(self, session: HttpSession, groups: tuple[str, ...]) -> HttpSession:
        """``session`` in the table (or the one another thread put there first), after
        ending what it evicted."""
        held, evicted = self._table.admit(session, groups)
        for victim in evicted:
            self._evict(victim)
        if held is session:
            return session
        session.close()
        if held is not None:
            return held
        now = time.monotonic()
        if now >= self._quiet_until:  # a flood of refusals is one line per minute
            self._quiet_until = now + 60.0
            logger.warning("HTTP sessions: all %d slots (or a principal's or address's cap) "
                           "in use, none idle: new sessions refused with 503",
                           len(self._table))
        raise SessionTableFull("every session slot is in use; try again shortly")

    def _evict(self, session: HttpSession) -> None:
        """End an evicted session everywhere: its client's next request is a 404, and it
        initializes again. Its record goes from the shared store too, else another worker
        (or this one) would take it up again from there."""
        logger.info("HTTP session %s… evicted (idle %.0f s) to make room", session.id[:6],
                    time.monotonic() - session.last_seen)
        self._end(session.id, session)

    def initialized(self, session: HttpSession) -> None:
        """``initialize`` was answered: write the session down for the other workers."""
        version = session.protocol_version
        if self.session_store is None or version is None:
            return
        info = session.server_session.info
        # Until the client's second request (on any worker: see get and _restore) the
        # record lives only as long as the session may wait for it: a session that never
        # completes its handshake is gone on every worker, not only on this one.
        record = SessionRecord(session.id, version, info.client_info,
                               dict(info.client_capabilities or {}),
                               owner=principal_key(session.owner),
                               lifetime=min(self.handshake_timeout, self.idle_timeout))
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
            # Its record is missing, not ended: no touch may end it for that.
            session.confirmed = _NOT_SHARED

    def get(self, session_id: str, owner: Principal | None = None) -> HttpSession | None:
        """The live session ``session_id`` if ``owner`` (the request's principal) made
        it: a session is bound to its creator, so another token cannot use it (it gets the
        same 404 as for an unknown id, which tells it nothing)."""
        self.sweep()
        session = self._table.get(session_id)
        if session is not None and session.owner != owner:
            return None
        if session is not None and not session.ended.is_set():
            # (Not touched here: the request that claims it does, see HttpSession.claim.)
            if not session.established:  # its second request: the record gets the idle
                session.established = True  # timeout now (see _confirmed)
                if session.confirmed != _NOT_SHARED:
                    session.confirmed = _UNCONFIRMED
            self._table.used(session)  # the most recently used: the last to be evicted
            return self._confirmed(session)
        if session is not None:
            return None
        if self.session_store is not None:
            return self._restore(session_id, owner)
        return None

    def _confirmed(self, session: HttpSession) -> HttpSession | None:
        """``session``, unless the shared store says it was ended elsewhere. The touch
        also keeps the record alive: at the session's second request it lifts the record
        from the handshake timeout it was saved with to the store's idle timeout."""
        if self.session_store is None:
            return session
        now = time.monotonic()
        if now - session.confirmed < CONFIRM_INTERVAL:
            return session
        first = session.confirmed == _UNCONFIRMED
        session.confirmed = now
        try:
            alive = self.session_store.touch(session.id)
        except OSError as exc:  # the store is unwell: keep serving what this worker holds
            logger.warning("session store touch failed: %s", exc)
            alive = True
            if first:  # the record still has the handshake timeout: again next request
                session.confirmed = _UNCONFIRMED
        if alive:
            return session
        self._table.pop(session.id, session)
        session.close()
        return None

    def _restore(self, session_id: str, owner: Principal | None = None) -> HttpSession | None:
        """Take up a session another worker initialized, from its stored record."""
        assert self.session_store is not None
        try:
            record = self.session_store.load(session_id)
        except StoreUnavailableError:
            raise  # the store is down, not the session gone: 503, and the client retries
        except OSError as exc:
            logger.warning("session store load failed: %s", exc)
            return None
        if record is None or record.protocol_version not in self.server.protocol.legacy_versions:
            return None
        if record.owner != principal_key(owner):  # another principal's: it does not exist
            return None
        try:  # a later request than initialize: the record gets the idle timeout now
            if not self.session_store.touch(session_id):
                return None  # expired (or ended) since the load
        except StoreUnavailableError:
            raise
        except OSError as exc:
            logger.warning("session store touch failed: %s", exc)
        # Counted for its principal, not its address: the store does not keep that one.
        groups = self._table.groups(owner, None)
        priming = self.store is not None and features(record.protocol_version).sse_polling
        session = HttpSession(self.server, self.store, session_id=record.session_id,
                              priming=priming, pool=self.pool, owner=owner, relay=self.relay,
                              shared=self.shared)
        session.established = True
        session.server_session.restore(record.protocol_version, record.client_info,
                                       record.client_capabilities)
        _apply_shared_state(session, record)
        held = self._admit(session, groups)  # or the one another thread restored first
        if held is session:
            logger.info("HTTP session %s… taken up from the session store", session_id[:6])
        return held

    def held(self, session_id: str) -> HttpSession | None:
        """The session if this worker holds it now (never taken up from the store)."""
        session = self._table.get(session_id)
        return session if session is not None and not session.ended.is_set() else None

    def end_here(self, session_id: str) -> None:
        """Another worker ended the session (``DELETE``): let go of it here at once."""
        session = self._table.pop(session_id)
        if session is not None:
            logger.info("HTTP session %s… ended on another worker", session_id[:6])
            session.close()

    def remove(self, session_id: str, owner: Principal | None = None) -> bool:
        """End a session (DELETE): here, and in the shared store for every worker. Only
        its ``owner`` may (see :meth:`get`)."""
        session = self._table.get(session_id)
        if session is not None and session.owner != owner:
            return False
        session = self._table.pop(session_id, session) if session is not None else None
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
        return self._end(session_id, session)

    def _end(self, session_id: str, session: HttpSession | None) -> bool:
        """End a session taken out of the table (``None``: held elsewhere only): close it,
        delete its record, and with a relay end it on every worker. Whether it existed.
        A store that cannot be reached is logged: the record then expires on its own."""
        existed = False
        if self.session_store is not None:
            try:
                existed = self.session_store.delete(session_id)
            except OSError as exc:
                logger.warning("session store delete failed: %s", exc)
        if self.relay is not None and (session is not None or existed):
            self._end_everywhere(session_id)
        if session is None:
            return existed
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
        forgets = None if self.store is None else self.store.capabilities.forgets
        if forgets is not None:
            try:
                forgets.forget(standalone_key(key_prefix(session_id)))
                forgets.forget(cursor_key(key_prefix(session_id)))
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
        expired = self._table.take(
            lambda s: s.ended.is_set() or (
                (now - s.last_seen > self.idle_timeout or (
                    not s.established and not s.legacy_sse
                    and now - s.created > self.handshake_timeout))
                and not s.busy()))
        for session in expired:
            logger.info("HTTP session %s… expired", session.id[:6])
            session.close()

    def close_all(self) -> None:
        for session in self._table.clear():
            session.close()

    def all(self) -> list[HttpSession]:
        """The sessions held now (a copy)."""
        return self._table.all()

    def __len__(self) -> int:
        return len(self._table)


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
