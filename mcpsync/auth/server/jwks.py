"""The key set of a :class:`~mcpsync.auth.server.JwtVerifier`, fetched with bounds.

PyJWT's ``PyJWKClient`` reads the whole JWKS response into memory before parsing it, so an
authorization server (or whatever answers at its URL) could make every resource server
hold an unbounded body. Here the document is fetched with the auth code's bounded
:class:`~mcpsync.auth.fetch.Fetcher` (a timeout, read in chunks, abandoned past
``max_bytes``) and only then handed to PyJWT (``PyJWK``), one key at a time as tokens
name them. A refused or unreachable document refuses the tokens (401), with one warning
per fetch; it never makes a token acceptable.

Caching as before: the document is kept ``lifespan`` seconds; a token naming a ``kid``
the document lacks (a key rotation) fetches it again, but at most once per ``cooldown``
seconds, whatever the tokens say; parsed keys are kept in an LRU of ``max_keys``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from ...errors import MessageTooLargeError
from ..fetch import FETCH_ERRORS, Fetcher

logger = logging.getLogger("mcpsync.auth.server")

#: The largest JWKS document read (bytes); a larger one refuses the tokens.
DEFAULT_MAX_JWKS_BYTES = 256 * 1024


class KeySet:
    """The signing keys published at ``url``, by ``kid``. Thread-safe: one fetch at a
    time, so a burst of tokens with an unknown kid costs one request, not a stampede."""

    def __init__(self, url: str, *, timeout: float, max_bytes: int, lifespan: float,
                 max_keys: int, cooldown: float) -> None:
        if max_bytes <= 0 or max_keys <= 0:
            raise ValueError("max_jwks_bytes and max_cached_keys must be positive")
        self.url = url
        self.max_bytes = max_bytes
        self.lifespan = lifespan
        self.max_keys = max_keys
        self.cooldown = cooldown
        self._fetcher = Fetcher(timeout, max_bytes)  # used under the lock only
        self._lock = threading.Lock()
        #: The document's signing-key members (JWK dicts, not yet parsed), by kid.
        self._members: dict[str, dict[str, Any]] = {}
        self._fetched_at: float | None = None  # monotonic time of the last good fetch
        self._tried_at: float | None = None  # of the last attempt, good or not
        self._parsed: OrderedDict[str, Any] = OrderedDict()

    def signing_key(self, kid: str) -> Any:
        """The ``PyJWK`` for ``kid``, or ``None`` when the (possibly refetched) document
        has no signing key of that id or could not be read. Raises PyJWT's errors for a
        member PyJWT cannot use."""
        from jwt import PyJWK

        with self._lock:
            now = time.monotonic()
            fresh = self._fetched_at is not None and now - self._fetched_at < self.lifespan
            if (not fresh or kid not in self._members) and (
                    self._tried_at is None or now - self._tried_at >= self.cooldown):
                self._tried_at = now
                self._refresh(now)
            member = self._members.get(kid)
            if member is None:
                return None
            key = self._parsed.get(kid)
            if key is None:
                key = PyJWK(member)
                self._parsed[kid] = key
                while len(self._parsed) > self.max_keys:
                    self._parsed.popitem(last=False)
            else:
                self._parsed.move_to_end(kid)
            return key

    def _refresh(self, now: float) -> None:
        """Fetch the document; on any failure keep what was cached (a key the server
        stopped publishing is only dropped by a document that was read)."""
        try:
            answer = self._fetcher.get_json(self.url)
        except MessageTooLargeError:
            logger.warning("mcpsync: the JWKS at %s is larger than max_jwks_bytes (%d); "
                           "tokens needing it are refused", self.url, self.max_bytes)
            return
        except FETCH_ERRORS as exc:
            logger.warning("mcpsync: could not fetch the JWKS at %s to verify a token: %s",
                           self.url, type(exc).__name__)
            return
        keys = answer.body.get("keys") if answer.body is not None else None
        if answer.status != 200 or not isinstance(keys, list):
            logger.warning("mcpsync: the JWKS at %s is not a key set (HTTP %d)", self.url,
                           answer.status)
            return
        members: dict[str, dict[str, Any]] = {}
        for member in keys:
            # Signing keys with an id, as PyJWKClient took them: a token names its key.
            if (isinstance(member, dict) and member.get("use") in ("sig", None)
                    and isinstance(member.get("kid"), str)):
                members.setdefault(member["kid"], member)
        self._members = members
        self._fetched_at = now
        self._parsed.clear()
