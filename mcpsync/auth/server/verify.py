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
from .jwks import DEFAULT_MAX_JWKS_BYTES, KeySet

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

    Keys come from ``jwks_url``, fetched by mcpsync with bounds (each fetch waits at most
    ``timeout`` seconds and reads at most ``max_jwks_bytes``: a larger document refuses the
    tokens, with a warning, never accepts one) and parsed by PyJWT: fetched once, cached
    (``jwks_cache_seconds``), and refetched when a token names a ``kid`` the cache lacks (a
    key rotation), at most once per ``refresh_cooldown`` seconds (so tokens with made-up
    kids cannot make this server hammer the authorization server); at most
    ``max_cached_keys`` parsed keys are held. Needs PyJWT with ``cryptography``
    (``pip install 'mcpsync[auth]'``).
    """

    def __init__(self, jwks_url: str, *, issuer: str, audience: str | Iterable[str],
                 algorithms: Iterable[str] = ("RS256", "ES256"), leeway: float = 60.0,
                 timeout: float = 10.0, jwks_cache_seconds: int = 300,
                 max_cached_keys: int = 16, refresh_cooldown: float = 10.0,
                 max_jwks_bytes: int = DEFAULT_MAX_JWKS_BYTES) -> None:
        try:
            import jwt
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
        self._keys = KeySet(jwks_url, timeout=timeout, max_bytes=max_jwks_bytes,
                            lifespan=jwks_cache_seconds, max_keys=max_cached_keys,
                            cooldown=refresh_cooldown)

    def verify(self, token: str) -> AccessToken | None:
        jwt = self._jwt
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = self._keys.signing_key(kid) if isinstance(kid, str) else None
            if key is None:
                logger.debug("mcpsync: bearer token refused: no key for its kid")
                return None
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=list(self.algorithms), audience=self.audience,
                issuer=self.issuer, leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]})
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


class IntrospectionVerifier:
    """Verifies opaque access tokens by asking the authorization server (RFC 7662 token
    introspection) at ``introspection_url``, authenticated as ``client_id`` /
    ``client_secret`` (HTTP Basic, the RFC's default; give neither for a server that does
    not ask).

    A token is good when the answer says ``active: true``, its ``exp`` (if any) is not past
    (``leeway`` seconds of skew), its ``iss`` is ``issuer`` (when given) and its ``aud``
    names ``audience`` (when given: this resource's URL; give it unless the authorization
    server only introspects tokens meant for you). Each call waits at most ``timeout``
    seconds and reads at most ``max_response_bytes``; an unreachable or unreadable server
    refuses the token. Answers are not cached: every request costs one introspection (put
    a cache in a verifier of your own if that is too many).
    """

    def __init__(self, introspection_url: str, *, client_id: str | None = None,
                 client_secret: str | None = None, issuer: str | None = None,
                 audience: str | Iterable[str] | None = None, leeway: float = 60.0,
                 timeout: float = 10.0, max_response_bytes: int = 64 * 1024) -> None:
        self.introspection_url = introspection_url
        self._credentials = (client_id, client_secret or "") if client_id else None
        self.issuer = issuer
        self.audience = ([audience] if isinstance(audience, str)
                         else list(audience) if audience is not None else None)
        self.leeway = leeway
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        # requests.Session is not documented as thread-safe: one per WSGI thread.
        self._local = threading.local()

    def _fetcher(self) -> Any:
        from ..fetch import Fetcher

        fetcher = getattr(self._local, "fetcher", None)
        if fetcher is None:
            fetcher = self._local.fetcher = Fetcher(self.timeout, self.max_response_bytes)
        return fetcher

    def verify(self, token: str) -> AccessToken | None:
        import base64
        from urllib.parse import quote

        from ..fetch import FETCH_ERRORS

        headers = {}
        if self._credentials is not None:
            user, secret = (quote(part, safe="") for part in self._credentials)
            headers["Authorization"] = "Basic " + base64.b64encode(
                f"{user}:{secret}".encode()).decode()
        try:
            answer = self._fetcher().request(
                "POST", self.introspection_url, headers=headers,
                data={"token": token, "token_type_hint": "access_token"})
        except FETCH_ERRORS as exc:
            logger.warning("mcpsync: token introspection failed: %s", type(exc).__name__)
            return None
        claims = answer.body
        if answer.status != 200 or claims is None or claims.get("active") is not True:
            return None
        exp = claims.get("exp")
        if exp is not None and (not isinstance(exp, (int, float))
                                or exp + self.leeway < time.time()):
            return None
        if self.issuer is not None and claims.get("iss") != self.issuer:
            return None
        aud = claims.get("aud")
        audience = ((aud,) if isinstance(aud, str)
                    else tuple(str(a) for a in aud) if isinstance(aud, list) else ())
        if self.audience is not None and not set(self.audience) & set(audience):
            return None
        sub, client = claims.get("sub"), claims.get("client_id")
        return AccessToken(subject=sub if isinstance(sub, str) else None,
                           client_id=client if isinstance(client, str) else None,
                           scopes=_scopes_of(claims),
                           expires_at=float(exp) if isinstance(exp, (int, float)) else None,
                           audience=audience, claims=claims)
