"""Token verification: the :class:`TokenVerifier` protocol and :class:`JwtVerifier`.

A verifier answers one question, "is this bearer token good for this resource, and
whose is it?", with an :class:`AccessToken` or ``None``. It never says *why* a token was
refused to the caller (the resource server answers ``invalid_token`` either way, as
RFC 6750 asks), and never logs the token.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import MissingDependencyError

logger = logging.getLogger("mcpsync.auth.server")


@dataclass(frozen=True)
class AccessToken:
    """A verified access token: who (``subject``), through which client (``client_id``),
    allowed what (``scopes``), until when (``expires_at``, epoch seconds), for which
    resource(s) (``audience``), and every claim as the verifier saw it (``claims``).
    It holds no token text, so it is safe to log or show."""

    subject: str | None
    client_id: str | None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)

    @property
    def principal(self) -> tuple[str | None, str | None, str | None]:
        """What identifies the party behind the token (issuer, subject, client): a
        handshake-era session is bound to it."""
        issuer = self.claims.get("iss")
        return (issuer if isinstance(issuer, str) else None, self.subject, self.client_id)

    def has_scopes(self, needed: Iterable[str]) -> bool:
        return set(needed) <= self.scopes


@runtime_checkable
class TokenVerifier(Protocol):
    """``verify(token)``: the :class:`AccessToken` the bearer ``token`` stands for, or
    ``None`` when it is not valid for this resource (bad, expired, another audience...).
    Called on a WSGI server thread for every request: it must be thread-safe, and should
    bound its own network waits."""

    def verify(self, token: str) -> AccessToken | None: ...


def _scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (RFC 9068: space-separated) or ``scp`` (a list, as some servers send)."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list):
        return frozenset(str(item) for item in raw)
    return frozenset()


class JwtVerifier:
    """Verifies JWT access tokens (RFC 9068) signed by a key of ``jwks_url``.

    Checks the signature (only ``algorithms``: never ``none``, never HMAC, so a public
    key cannot be used as a shared secret), ``iss`` == ``issuer``, ``aud`` contains
    ``audience`` (this resource's URL, RFC 8707, so a token minted for another server is
    refused), ``exp`` (required) and ``nbf``/``iat`` with ``leeway`` seconds of clock skew.

    Keys come from PyJWT's ``PyJWKClient``: fetched once, cached (``jwks_cache_seconds``),
    and refetched when a token names a ``kid`` the cache lacks (a key rotation), at most
    once per ``refresh_cooldown`` seconds (so tokens with made-up kids cannot make this
    server hammer the authorization server); each fetch waits at most ``timeout`` seconds
    and holds at most ``max_cached_keys`` keys. Needs PyJWT with ``cryptography``
    (``pip install 'mcpsync[auth]'``).
    """

    def __init__(self, jwks_url: str, *, issuer: str, audience: str | Iterable[str],
                 algorithms: Iterable[str] = ("RS256", "ES256"), leeway: float = 60.0,
                 timeout: float = 10.0, jwks_cache_seconds: int = 300,
                 max_cached_keys: int = 16, refresh_cooldown: float = 10.0) -> None:
        try:
            import jwt
            from jwt import PyJWKClient
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingDependencyError(
                "JwtVerifier needs PyJWT with cryptography: pip install 'mcpsync[auth]'"
            ) from exc
        allowed = tuple(algorithms)
        if not allowed or any(a.lower() == "none" or a.upper().startswith("HS")
                              for a in allowed):
            raise ValueError("algorithms must be asymmetric signature algorithms "
                             "(RS256, ES256, PS256, EdDSA...), never 'none' or HS*")
        self._jwt = jwt
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.algorithms = allowed
        self.leeway = leeway
        self._keys = PyJWKClient(jwks_url, cache_keys=True, max_cached_keys=max_cached_keys,
                                 cache_jwk_set=True, lifespan=jwks_cache_seconds,
                                 timeout=timeout, cooldown_duration=refresh_cooldown)
        # PyJWKClient refetches on an unknown kid; one fetch at a time, so a burst of
        # tokens with a bogus kid costs one JWKS request each, in turn, not a stampede.
        self._fetch_lock = threading.Lock()

    def verify(self, token: str) -> AccessToken | None:
        jwt = self._jwt
        try:
            with self._fetch_lock:
                key = self._keys.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=list(self.algorithms), audience=self.audience,
                issuer=self.issuer, leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]})
        except jwt.PyJWKClientConnectionError as exc:
            logger.warning("mcpsync: could not fetch the JWKS to verify a token: %s", exc)
            return None
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            logger.debug("mcpsync: bearer token refused: %s", type(exc).__name__)
            return None
        aud = claims.get("aud")
        audience = (aud,) if isinstance(aud, str) else tuple(str(a) for a in aud or ())
        sub, client = claims.get("sub"), claims.get("client_id", claims.get("azp"))
        exp = claims.get("exp")
        return AccessToken(subject=sub if isinstance(sub, str) else None,
                           client_id=client if isinstance(client, str) else None,
                           scopes=_scopes_of(claims),
                           expires_at=float(exp) if isinstance(exp, (int, float)) else None,
                           audience=audience, claims=claims)


def expired(token: AccessToken, now: float | None = None) -> bool:
    """Whether ``token`` is past its ``expires_at`` (a verifier of opaque tokens may
    return one without checking)."""
    return token.expires_at is not None and token.expires_at < (now or time.time())
