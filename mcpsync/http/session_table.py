"""The slots of one worker's handshake-era sessions, and who gets one when they are taken.

A handshake-era client that sends ``initialize`` and ``notifications/initialized`` and
then nothing keeps its session for the idle timeout (30 minutes by default), and real
clients do sit idle that long, so idle sessions cannot be expired in seconds. Without more,
a few hundred such clients fill ``max_sessions`` and shut every newcomer out. So the table
works as a cache: when it is full, the session idle the longest that has no request in
flight and no open stream is *evicted* (its client gets 404 on its next request and
initializes again, as the spec tells it to), and a newcomer is refused (503, with
``Retry-After``) only when no session can be evicted. Sessions still in their handshake
go before those that completed it.

Optional caps per principal (the access token's, under ``auth=``) and per remote address
apply first, the same way: past its own cap, a principal or address evicts its own
longest-idle evictable session, else it is refused. The address is the WSGI
``REMOTE_ADDR``: behind a proxy, that is the proxy's unless a middleware puts the client's
there.

Kept apart from :mod:`mcpsync.http.session_registry` (the bookkeeping of what sessions do: stores,
relay, expiry) because this owns one thing, the table and its admission rule, under its
own lock; ending an evicted session is the registry's.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Iterable

from ..dispatch.principal import Principal, principal_key
from ..errors import StoreUnavailableError
from .sessions import HttpSession

#: Seconds a refused client is told to wait (``Retry-After``): a slot frees as soon as any
#: session's request or stream ends.
RETRY_AFTER = 1


class SessionTableFull(StoreUnavailableError):
    """No slot for a session: the table (or the principal's or address's cap) is full of
    sessions that are in use. Answered like a store that cannot take more now: 503 with
    ``Retry-After``, and the client tries again shortly."""


def _eviction_order(session: HttpSession) -> tuple[bool, float]:
    # Half-open sessions first (a bare initialize is the cheap way to take slots), then
    # the one idle the longest.
    return (session.established, session.last_seen)


class SessionTable:
    """Live sessions by id, counted per capped group (principal, address). Thread-safe:
    one lock, taken before any session's own lock and never held while a session is
    closed (the caller closes what :meth:`admit` evicted)."""

    def __init__(self, max_sessions: int, *, per_principal: int | None = None,
                 per_address: int | None = None) -> None:
        for name, value in (("max_sessions_per_principal", per_principal),
                            ("max_sessions_per_address", per_address)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None: no cap)")
        self.max_sessions = max_sessions
        self.per_principal = per_principal
        self.per_address = per_address
        self._sessions: dict[str, HttpSession] = {}
        #: The ids in eviction order (dicts as ordered sets): half-open sessions by age,
        #: then the others by their last request, so the victim is found at the front
        #: (past only the busy ones) rather than by a scan of the whole table.
        self._fresh: dict[str, None] = {}
        self._used: dict[str, None] = {}
        #: Capped group -> ids of its sessions; and each session's groups.
        self._groups: dict[str, set[str]] = {}
        self._member_of: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def groups(self, owner: Principal | None, address: str | None) -> tuple[str, ...]:
        """The capped groups a session of ``owner`` made from ``address`` counts in (none
        without caps; no principal group without ``auth=``, where all are anonymous)."""
        found: list[str] = []
        if self.per_principal is not None and owner is not None:
            found.append("principal " + principal_key(owner))
        if self.per_address is not None and address:
            found.append("address " + address)
        return tuple(found)

    def _limit(self, group: str) -> int:
        limit = self.per_principal if group.startswith("principal ") else self.per_address
        assert limit is not None
        return limit

    # -- admission -----------------------------------------------------------------------

    def admit(self, session: HttpSession, groups: tuple[str, ...],
              ) -> tuple[HttpSession | None, list[HttpSession]]:
        """Add ``session`` in ``groups``, evicting what it takes; returns the session now
        held under its id (``session``, or one another thread added first; ``None``:
        refused) and the evicted sessions, already out of the table and retired, for the
        caller to end (also when refused: a victim retired before a later one turned out
        busy)."""
        evicted: list[HttpSession] = []
        with self._lock:
            existing = self._sessions.get(session.id)
            if existing is not None:
                return existing, evicted
            while True:
                plan = self._plan(groups)
                if plan is None:
                    return None, evicted
                if not plan:
                    break
                for victim in plan:  # a victim that became busy since is skipped: plan again
                    if victim.retire():
                        self._remove(victim.id)
                        evicted.append(victim)
            self._sessions[session.id] = session
            (self._used if session.established else self._fresh)[session.id] = None
            self._member_of[session.id] = groups
            for group in groups:
                self._groups.setdefault(group, set()).add(session.id)
        return session, evicted

    def _plan(self, groups: tuple[str, ...]) -> list[HttpSession] | None:
        """The sessions to evict so that one more fits in ``groups`` and in the table (each
        group's own first); ``None`` if not enough of them can be. Under the lock."""
        chosen: list[HttpSession] = []
        for group in groups:  # a cap's group is small: its members are scanned
            members = self._groups.get(group, set())
            taken = {s.id for s in chosen}
            excess = len(members) - len(taken & members) - self._limit(group) + 1
            if excess > 0:
                candidates = [s for s in map(self._sessions.__getitem__, members)
                              if s.id not in taken and s.evictable()]
                if len(candidates) < excess:
                    return None
                chosen += heapq.nsmallest(excess, candidates, key=_eviction_order)
        excess = len(self._sessions) - len(chosen) - self.max_sessions + 1
        if excess > 0:  # the table's: from the front of the eviction order
            taken = {s.id for s in chosen}
            found = 0
            for session_id in itertools.chain(self._fresh, self._used):
                if found == excess:
                    break
                session = self._sessions[session_id]
                if session_id not in taken and session.evictable():
                    chosen.append(session)
                    found += 1
            if found < excess:
                return None
        return chosen

    def used(self, session: HttpSession) -> None:
        """A request of ``session`` came: it goes to the back of the eviction order (out
        of the half-open ones if it has completed its handshake)."""
        with self._lock:
            if self._sessions.get(session.id) is not session:
                return
            self._fresh.pop(session.id, None)
            self._used.pop(session.id, None)
            (self._used if session.established else self._fresh)[session.id] = None

    # -- the rest of the table -----------------------------------------------------------

    def _remove(self, session_id: str) -> HttpSession | None:
        session = self._sessions.pop(session_id, None)
        self._fresh.pop(session_id, None)
        self._used.pop(session_id, None)
        for group in self._member_of.pop(session_id, ()):
            members = self._groups.get(group)
            if members is not None:
                members.discard(session_id)
                if not members:
                    del self._groups[group]
        return session

    def get(self, session_id: str) -> HttpSession | None:
        with self._lock:
            return self._sessions.get(session_id)

    def pop(self, session_id: str, only: HttpSession | None = None) -> HttpSession | None:
        """Take ``session_id`` out (only if it is ``only``, when given)."""
        with self._lock:
            if only is not None and self._sessions.get(session_id) is not only:
                return None
            return self._remove(session_id)

    def take(self, predicate: Callable[[HttpSession], bool]) -> list[HttpSession]:
        """Take out every session ``predicate`` holds for (it runs under the lock)."""
        with self._lock:
            found = [s for s in self._sessions.values() if predicate(s)]
            for session in found:
                self._remove(session.id)
        return found

    def clear(self) -> Iterable[HttpSession]:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._fresh.clear()
            self._used.clear()
            self._groups.clear()
            self._member_of.clear()
        return sessions

    def all(self) -> list[HttpSession]:
        with self._lock:
            return list(self._sessions.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
