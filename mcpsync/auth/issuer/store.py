"""The authorization server's state contract: clients, codes, grants, tokens, keys.

Every worker of a site (gunicorn ``-w N``, several hosts) must agree on it: a code issued
by one worker is exchanged at another, a refresh token rotated by one is reused at
another (and must be caught there). So the state lives in an :class:`IssuerStore`
(SQLite through the standard library, :class:`~mcpsync.auth.issuer.sql.SqlIssuerStore`;
Redis, :class:`~mcpsync.auth.issuer.redis_store.RedisIssuerStore`; Django's ORM,
``mcpsync.django.oauth``), and one contract test suite runs against each.

Rules every store keeps (they are the security properties, not conveniences):

* **Secrets are stored hashed.** Codes, refresh tokens, opaque access tokens and client
  secrets are kept as :func:`secret_hash` of their text: a copy of the database
  issues nothing.
* **A code is taken once.** :meth:`IssuerStore.take_code` is atomic across workers: of two
  concurrent exchanges of one code exactly one gets it; the other (and every later one)
  learns it was used, so the caller revokes what the first one was issued (OAuth 2.1
  §4.1.3).
* **A refresh token is rotated once.** :meth:`IssuerStore.rotate_refresh` replaces the
  presented token by a new one atomically; presenting a token that was already rotated
  revokes its whole grant (the family) in the same step (OAuth 2.1 §4.3.1, reuse
  detection): the thief and the rightful client both lose it, and the user signs in anew.
* **A revoked grant stays revoked**, and its tokens are gone with it.
* **Bounded.** Dynamic and metadata-document clients are limited in number
  (:class:`StoreFullError` past it); codes, tokens and cached documents expire and
  :meth:`IssuerStore.purge` (called as the server works) drops them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "GRANT_GRACE",
    "ClientRecord",
    "CodeRecord",
    "GrantRecord",
    "IssuerStore",
    "KeyRecord",
    "RefreshOutcome",
    "StoreFullError",
    "TokenRecord",
    "secret_hash",
]

#: Where a client came from: configured by the site, RFC 7591 registration, or a
#: client ID metadata document fetched by its URL (cached until ``expires_at``).
ClientSource = Literal["registered", "dynamic", "metadata-document"]


#: Seconds a grant with no stored token is kept: longer than any access token lives
#: (a JWT access token is not stored, yet its grant must outlive it).
GRANT_GRACE = 24 * 3600.0


def secret_hash(secret: str) -> str:
    """The stored form of a secret (code, token, client secret): SHA-256, hex. The
    secrets are 256-bit random strings, so a plain hash (no salt, no stretching) is
    enough: there is nothing to guess."""
    return hashlib.sha256(secret.encode()).hexdigest()


class StoreFullError(Exception):
    """The store holds as many dynamic clients as it may: registration is refused."""


@dataclass(frozen=True)
class ClientRecord:
    """A client: ``metadata`` is its RFC 7591 metadata (``redirect_uris``,
    ``client_name``, ``token_endpoint_auth_method``, ``application_type``...)."""

    client_id: str
    metadata: dict[str, Any]
    source: ClientSource
    secret_hash: str | None = None
    created_at: float = 0.0
    expires_at: float | None = None  # a cached metadata document is fetched again after


@dataclass(frozen=True)
class CodeRecord:
    """An authorization code (by its hash), bound to everything the token request must
    repeat or prove: client, redirect URI, PKCE challenge, resource."""

    code_hash: str
    client_id: str
    redirect_uri: str
    scope: str
    resource: str
    subject: str
    code_challenge: str
    grant_id: str
    expires_at: float
    claims: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GrantRecord:
    """What a user granted a client: one family of tokens (the first code's exchange and
    every refresh after it). Revoking it ends them all."""

    grant_id: str
    client_id: str
    subject: str
    scope: str
    resource: str
    created_at: float
    claims: dict[str, Any] = field(default_factory=dict)
    revoked: bool = False


@dataclass(frozen=True)
class TokenRecord:
    """A refresh token, or an opaque access token (``kind``), by its hash."""

    token_hash: str
    kind: Literal["refresh", "access"]
    grant_id: str
    expires_at: float
    rotated: bool = False  # a refresh token already exchanged for a new one


@dataclass(frozen=True)
class KeyRecord:
    """A signing key: its ``kid``, its private key (PEM) and when it was made. The newest
    signs; older ones stay published until the tokens they signed have expired."""

    kid: str
    private_pem: str
    created_at: float


#: The outcome of :meth:`IssuerStore.rotate_refresh`.
RefreshOutcome = Literal["rotated", "reused", "unknown"]


@runtime_checkable
class IssuerStore(Protocol):
    """Where the authorization server keeps its state. Every method is atomic across the
    processes sharing the store. ``now`` is passed in (times are the server's clock)."""

    # -- clients ----------------------------------------------------------------------
    def put_client(self, client: ClientRecord) -> None:
        """Add or replace a client. Raises :class:`StoreFullError` when adding a
        ``dynamic`` or ``metadata-document`` client beyond the store's bound."""

    def get_client(self, client_id: str, now: float) -> ClientRecord | None:
        """The client, or ``None`` (also for a cached document past ``expires_at``)."""

    def delete_client(self, client_id: str) -> None:
        """Forget a client (its grants stay until revoked)."""

    # -- codes ------------------------------------------------------------------------
    def put_code(self, code: CodeRecord) -> None:
        """Keep a new code until ``code.expires_at``."""

    def take_code(self, code_hash: str, now: float) -> tuple[CodeRecord | None, bool]:
        """Take a code: ``(record, False)`` the first time, ``(record, True)`` when it was
        already taken (a replay: revoke ``record.grant_id``), ``(None, False)`` when it is
        unknown or expired."""

    # -- grants and tokens --------------------------------------------------------------
    def put_grant(self, grant: GrantRecord) -> None:
        """Add a grant (a new family of tokens)."""

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        """The grant, revoked or not, or ``None``."""

    def grants_of(self, subject: str) -> list[GrantRecord]:
        """The live (unrevoked) grants of a user, oldest first."""

    def revoke_grant(self, grant_id: str) -> None:
        """Revoke a grant: it is marked revoked and its tokens are deleted."""

    def put_token(self, token: TokenRecord) -> None:
        """Keep a refresh or opaque access token until ``token.expires_at``."""

    def get_token(self, token_hash: str, now: float) -> TokenRecord | None:
        """The token, or ``None`` when unknown or expired (a rotated refresh token is
        returned, ``rotated=True``)."""

    def rotate_refresh(self, old_hash: str, new: TokenRecord,
                       now: float) -> tuple[RefreshOutcome, GrantRecord | None]:
        """Replace the refresh token ``old_hash`` by ``new`` (same grant), atomically.
        ``("rotated", grant)``: done. ``("reused", grant)``: ``old_hash`` had already been
        rotated; its grant is revoked, nothing is stored. ``("unknown", None)``: no such
        live token (expired, revoked, never issued), or its grant is revoked."""

    # -- signing keys -----------------------------------------------------------------
    def signing_keys(self) -> list[KeyRecord]:
        """The signing keys, newest first."""

    def add_key(self, key: KeyRecord, *, keep: int) -> None:
        """Add a key and keep only the newest ``keep`` keys."""

    # -- housekeeping -----------------------------------------------------------------
    def purge(self, now: float) -> None:
        """Drop expired codes, tokens and cached metadata documents, revoked grants, and
        grants older than :data:`GRANT_GRACE` seconds with no live token left (every
        token they gave has expired: nothing can use them again)."""
