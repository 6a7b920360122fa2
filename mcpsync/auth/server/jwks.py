"""The key set of a :class:`~mcpsync.auth.server.JwtVerifier`, fetched with bounds.

PyJWT's ``PyJWKClient`` reads the whole JWKS response into memory before parsing it, so an
authorization server (or whatever answers at its URL) could make every resource server
hold an unbounded body. Here the document is fetched with the auth code's bounded
:class:`~mcpsync.auth.fetch.Fetcher` (the whole fetch ends by a deadline, the body is read
in chunks and abandoned past ``max_bytes``) and only then handed to PyJWT (``PyJWK``), one
key at a time as tokens name them. A refused, unreachable or too slow document refuses the
tokens that need it (401), with one warning per fetch; it never makes a token acceptable.

Caching as before: the document is kept ``lifespan`` seconds; a token naming a ``kid``
the document lacks (a key rotation) fetches it again, but at most once per ``cooldown``
seconds, whatever the tokens say; parsed keys are kept in an LRU of ``max_keys``.

A fetch never blocks a token whose key is cached. The lock guards the cache only, never a
fetch: one thread at a time fetches (single flight), outside the lock. Meanwhile a token
whose ``kid`` is cached is verified with the cached key at once, even when the document
is past its ``lifespan`` (the stale key is served until a document that was read drops
it); a token naming a ``kid`` the cache lacks waits for that one fetch's outcome, within
its own deadline, then is refused if the key is still unknown. The thread that fetches
decides with what it fetched (so the token that found the document stale waits for it:
one request per ``lifespan``, at most ``timeout`` seconds).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from ...errors import MessageTooLargeError
from ...protocol.deadline import Deadline
from ..fetch import FETCH_ERRORS, Fetcher

logger = logging.getLogger("mcpsync.auth.server")

#: The largest JWKS document read (bytes); a larger one refuses the tokens.
DEFAULT_MAX_JWKS_BYTES = 256 * 1024


class _Flight:
    """The one fetch in progress: waiters block on ``done`` (set however it ends)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class KeySet:
    """The signing keys published at ``url``, by ``kid``. Thread-safe: one fetch at a
    time (outside the lock), so a burst of tokens with an unknown kid costs one request,
    not a stampede, and tokens with cached keys never wait for it."""

    def __init__(self, url: str, *, timeout: float, max_bytes: int, lifespan: float,
                 max_keys: int, cooldown: float) -> None:
        if max_bytes <= 0 or max_keys <= 0:
            raise ValueError("max_jwks_bytes and max_cached_keys must be positive")
        self.url = url
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.lifespan = lifespan
        self.max_keys = max_keys
        self.cooldown = cooldown
        self._fetcher = Fetcher(timeout, max_bytes)  # used by the flight's leader only
        self._lock = threading.Lock()
        #: The document's signing-key members (JWK dicts, not yet parsed), by kid.
        self._members: dict[str, dict[str, Any]] = {}
        self._fetched_at: float | None = None  # monotonic time of the last good fetch
        self._tried_at: float | None = None  # of the last attempt, good or not
        self._parsed: OrderedDict[str, Any] = OrderedDict()
        self._flight: _Flight | None = None

    def signing_key(self, kid: str, deadline: Deadline | None = None) -> Any:
        """The ``PyJWK`` for ``kid``, or ``None`` when the (possibly refetched) document
        has no signing key of that id or could not be read by ``deadline`` (default:
        ``timeout`` from now). Raises PyJWT's errors for a member PyJWT cannot use."""
        budget = deadline if deadline is not None else Deadline(self.timeout, "JWKS fetch")
        flight, lead = self._plan(kid)
        if flight is not None:
            if lead:
                self._lead(flight, budget)
            elif not flight.done.wait(budget.remaining() if budget.bounded else None):
                logger.debug("mcpsync: bearer token refused: its key was still being "
                             "fetched when its deadline came")
                return None
        return self._key(kid)

    def _plan(self, kid: str) -> tuple[_Flight | None, bool]:
        """Whether this token needs a fetch: ``(None, False)`` no (use the cache now),
        ``(flight, True)`` it leads a new one, ``(flight, False)`` it waits for the one in
        progress (only when its kid is unknown: a cached key is served stale meanwhile)."""
        with self._lock:
            now = time.monotonic()
            known = kid in self._members
            fresh = self._fetched_at is not None and now - self._fetched_at < self.lifespan
            if known and fresh:
                return None, False
            if self._flight is not None:
                return (None, False) if known else (self._flight, False)
            if self._tried_at is not None and now - self._tried_at < self.cooldown:
                return None, False
            self._tried_at = now
            self._flight = _Flight()
            return self._flight, True

    def _lead(self, flight: _Flight, deadline: Deadline) -> None:
        """Fetch (no lock held), store what was read, and release the waiters however the
        fetch ended."""
        try:
            members = self._fetch(deadline)
            with self._lock:
                if members is not None:
                    self._members = members
                    self._fetched_at = time.monotonic()
                    self._parsed.clear()
        finally:
            with self._lock:
                self._flight = None
            flight.done.set()

    def _key(self, kid: str) -> Any:
        from jwt import PyJWK

        with self._lock:
            member = self._members.get(kid)
            if member is None:
                return None
            key = self._parsed.get(kid)
            if key is not None:
                self._parsed.move_to_end(kid)
                return key
        key = PyJWK(member)  # parsing is CPU work: not under the lock
        with self._lock:
            if self._members.get(kid) is member:  # not replaced by a fetch meanwhile
                self._parsed[kid] = key
                while len(self._parsed) > self.max_keys:
                    self._parsed.popitem(last=False)
        return key

    def _fetch(self, deadline: Deadline) -> dict[str, dict[str, Any]] | None:
        """The document's signing-key members, or ``None`` on any failure (then what was
        cached is kept: a key the server stopped publishing is only dropped by a document
        that was read)."""
        try:
            answer = self._fetcher.get_json(self.url, deadline=deadline)
        except MessageTooLargeError:
            logger.warning("mcpsync: the JWKS at %s is larger than max_jwks_bytes (%d); "
                           "tokens needing it are refused", self.url, self.max_bytes)
            return None
        except FETCH_ERRORS as exc:
            logger.warning("mcpsync: could not fetch the JWKS at %s to verify a token: %s",
                           self.url, type(exc).__name__)
            return None
        keys = answer.body.get("keys") if answer.body is not None else None
        if answer.status != 200 or not isinstance(keys, list):
            logger.warning("mcpsync: the JWKS at %s is not a key set (HTTP %d)", self.url,
                           answer.status)
            return None
        members: dict[str, dict[str, Any]] = {}
        for member in keys:
            # Signing keys with an id, as PyJWKClient took them: a token names its key.
            if (isinstance(member, dict) and member.get("use") in ("sig", None)
                    and isinstance(member.get("kid"), str)):
                members.setdefault(member["kid"], member)
        return members
