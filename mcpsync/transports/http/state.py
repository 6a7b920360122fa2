"""The HTTP client's session state: which era it speaks, its session id and protocol
version, behind one lock, with a single-flight re-initialize.

Many threads send at once (one per call); each reads the state once, as a
:class:`Snapshot`, and sends with it. When the server forgets the session (404), every
call that was sent with it learns so at about the same time. Exactly one of them (the
leader) initializes a new session; the others wait for it and retry with the new one.
A call that was sent before a re-initialize that has already finished sees a newer
``generation`` and just retries. So N concurrent calls after an expiry cost one
``initialize`` and all succeed.

Eras::

    probing ──► modern           2026-07-28: no session, each POST stands alone
       │
       ├──────► streamable       the handshake era on Streamable HTTP (maybe a session)
       │            ▲  │
       │            └──┴─ reinitializing   (while the leader makes a new session)
       └──────► legacy-sse       2024-11-05 HTTP+SSE: one GET stream, POSTs to its endpoint
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

Era = Literal["probing", "modern", "streamable", "legacy-sse"]

PROBING: Final = "probing"
MODERN: Final = "modern"
STREAMABLE: Final = "streamable"
LEGACY_SSE: Final = "legacy-sse"


@dataclass(frozen=True)
class Snapshot:
    """The state one request is sent with."""

    era: Era
    session_id: str | None
    protocol_version: str | None
    generation: int


#: What a re-initialize produces: the new session id and protocol version, or ``None``.
NewSession = tuple[str | None, str | None] | None


class SessionState:
    """See the module docstring. Thread-safe; never runs the re-initialize under its lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._era: Era = PROBING
        self._session_id: str | None = None
        self._protocol_version: str | None = None
        self._generation = 0
        self._reinit: threading.Event | None = None  # set when the running one finishes

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(self._era, self._session_id, self._protocol_version,
                            self._generation)

    @property
    def era(self) -> Era:
        with self._lock:
            return self._era

    @property
    def session_id(self) -> str | None:
        with self._lock:
            return self._session_id

    @property
    def protocol_version(self) -> str | None:
        with self._lock:
            return self._protocol_version

    @property
    def reinitializing(self) -> bool:
        with self._lock:
            return self._reinit is not None

    def set_era(self, era: Era) -> None:
        with self._lock:
            self._era = era

    def initialized(self, session_id: str | None, protocol_version: str | None) -> None:
        """An ``initialize`` succeeded: the handshake era, with this session (if any)."""
        with self._lock:
            if self._era != LEGACY_SSE:
                self._era = STREAMABLE
            if session_id:
                self._session_id = session_id
            if protocol_version is not None:
                self._protocol_version = protocol_version

    def answered_modern(self) -> None:
        """A 2026-07-28 request was answered while still probing: the era is settled."""
        with self._lock:
            if self._era == PROBING:
                self._era = MODERN

    def wait_ready(self, timeout: float) -> None:
        """Block (at most ``timeout``) while a re-initialize runs, so that a new request
        goes out with the new session rather than the forgotten one."""
        with self._lock:
            running = self._reinit
        if running is not None:
            running.wait(timeout)

    def reinitialize(self, stale: Snapshot, work: Callable[[], NewSession],
                     timeout: float) -> bool:
        """Replace the session that ``stale`` was sent with; True when there is a new one
        to retry with. Only one thread runs ``work``; the others wait for its outcome."""
        with self._lock:
            if self._generation != stale.generation:
                return True  # someone already did, after this request was sent
            running = self._reinit
            if running is None:
                running = self._reinit = threading.Event()
                leader = True
            else:
                leader = False
        if not leader:
            running.wait(timeout)
            with self._lock:
                return self._generation != stale.generation
        outcome: NewSession = None
        try:
            outcome = work()
        finally:
            with self._lock:
                if outcome is not None:
                    self._session_id, self._protocol_version = outcome
                    self._generation += 1
                self._reinit = None
            running.set()
        return outcome is not None

    def forget(self) -> str | None:
        """The session is over (the transport closes): return its id, for the DELETE."""
        with self._lock:
            session_id, self._session_id = self._session_id, None
            return session_id
