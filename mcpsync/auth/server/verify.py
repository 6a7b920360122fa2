"""Token verification: the :class:`TokenVerifier` protocol, :class:`AccessToken` and
:class:`JwtVerifier` (:class:`~mcpsync.auth.server.IntrospectionVerifier` is in
``introspection.py``).

A verifier answers one question, "is this bearer token good for this resource, and
whose is it?", with an :class:`AccessToken` or ``None``. It never says *why* a token was
refused to the caller (the resource server answers ``invalid_token`` either way, as
RFC 6750 asks) except through :class:`InvalidTokenError`, whose description is written
for the client, and never logs the token.

Whose it is matters: sessions, ``requestState`` and tasks are bound to the token's
principal (issuer, subject, client). A token naming neither a subject nor a client would
make every such token of an issuer one principal, sharing all of that, so by default it is
refused (:data:`NO_PRINCIPAL`); ``anonymous_principal="per-token"`` binds each such token
to a principal of its own instead (:func:`identify`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

from ...protocol.deadline import Deadline
from ..errors import MissingDependencyError
from .claims import time_claims_refusal
from .jwks import DEFAULT_MAX_JWKS_BYTES, KeySet

logger = logging.getLogger("mcpsync.auth.server")

#: What a verifier does with a token naming neither ``sub`` nor ``client_id``.
AnonymousPrincipal = Literal["refuse", "per-token"]
ANONYMOUS_MODES: Final = ("refuse", "per-token")
#: The ``error_description`` of a token refused for naming nobody.
NO_PRINCIPAL: Final = "the access token names no subject (sub) or client (client_id)"


class InvalidTokenError(Exception):
    """A verifier's refusal of a token with a ``description`` the client may see (the
    ``error_description`` of the 401 ``invalid_token`` challenge). It must say what is
    wrong with the token in general terms, never quote it."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True)
class AccessToken:
    """A verified access token: who (``subject``), through which client (``client_id``),
    allowed what (``scopes``), until when (``expires_at``, epoch seconds), for which
    resource(s) (``audience``), and every claim as the verifier saw it (``claims``).
    ``anonymous_key``: for a token naming neither subject nor client, accepted with
    ``anonymous_principal="per-token"``, a key derived from the token alone (a hash) that
    makes it a principal of its own. It holds no token text, so it is safe to log or show."""

    subject: str | None
    client_id: str | None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)
    anonymous_key: str | None = None

    @property
    def principal(self) -> tuple[str | None, ...]:
        """What identifies the party behind the token: (issuer, subject, client), or for
        an anonymous token (issuer, None, None, its key) -- never equal to a named one's.
        Sessions, request states and tasks are bound to it."""
        issuer = self.claims.get("iss")
        iss = issuer if isinstance(issuer, str) else None
        if self.subject is None and self.client_id is None and self.anonymous_key:
            return (iss, None, None, self.anonymous_key)
        return (iss, self.subject, self.client_id)

    @property
    def names_nobody(self) -> bool:
        """Whether the token identifies no one: no subject, no client, no anonymous key.
        Its principal would be shared by every such token of its issuer, so the resource
        server refuses it."""
        return self.subject is None and self.client_id is None and not self.anonymous_key

    def has_scopes(self, needed: Iterable[str]) -> bool:
        return set(needed) <= self.scopes


@runtime_checkable
class TokenVerifier(Protocol):
    """``verify(token)``: the :class:`AccessToken` the bearer ``token`` stands for, or
    ``None`` when it is not valid for this resource (bad, expired, another audience...);
    it may raise :class:`InvalidTokenError` to tell the client why. Called on a WSGI
    server thread for every request: it must be thread-safe, and should end its own
    network waits by a deadline."""

    def verify(self, token: str) -> AccessToken | None: ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (RFC 9068: space-separated) or ``scp`` (a list, as some servers send)."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list):
        return frozenset(str(item) for item in raw)
    return frozenset()


def _name(value: Any) -> str | None:
    """A subject or client id, or ``None`` (an empty string names nobody either)."""
    return value if isinstance(value, str) and value else None


def check_anonymous_mode(mode: str) -> None:
    if mode not in ANONYMOUS_MODES:
        raise ValueError(f"anonymous_principal must be one of {ANONYMOUS_MODES}, not {mode!r}")


def identify(token: str, claims: Mapping[str, Any], subject: Any, client_id: Any,
             mode: AnonymousPrincipal, audience: tuple[str, ...]) -> AccessToken:
    """The :class:`AccessToken` of verified ``claims``. A token naming neither subject
    nor client raises :class:`InvalidTokenError` (``mode="refuse"``) or gets the SHA-256
    of the token text as its ``anonymous_key`` (``"per-token"``): each token its own
    principal, and a new token (a refresh) a new one."""
    sub, client = _name(subject), _name(client_id)
    key = None
    if sub is None and client is None:
        if mode != "per-token":
            logger.debug("mcpsync: bearer token refused: it names no subject or client")
            raise InvalidTokenError(NO_PRINCIPAL)
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
    exp = claims.get("exp")
    return AccessToken(subject=sub, client_id=client, scopes=scopes_of(claims),
                       expires_at=float(exp) if isinstance(exp, (int, float)) else None,
                       audience=audience, claims=claims, anonymous_key=key)


def audience_of(claims: Mapping[str, Any]) -> tuple[str, ...]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return (aud,)
    return tuple(str(a) for a in aud) if isinstance(aud, list) else ()


class JwtVerifier:
    """Verifies JWT access tokens (RFC 9068) signed by a key of ``jwks_url``.

    Checks the signature (only ``algorithms``: never ``none``, never HMAC, so a public
    key cannot be used as a shared secret), ``iss`` == ``issuer``, ``aud`` contains
    ``audience`` (this resource's URL, RFC 8707, so a token minted for another server is
    refused), ``exp`` (required), ``nbf`` and ``iat`` with ``leeway`` seconds of clock skew
    (:mod:`~mcpsync.auth.server.claims`, shared with the introspection verifier).

    A token naming neither ``sub`` nor ``client_id`` (nor ``azp``) is refused with
    :data:`NO_PRINCIPAL` unless ``anonymous_principal="per-token"``, which makes each
    such token a principal of its own (see :func:`identify`).

    Keys come from ``jwks_url``, fetched by mcpsync with bounds (each fetch ends within
    ``timeout`` seconds, connect, head and body together, and reads at most
    ``max_jwks_bytes``: a larger or slower document refuses the tokens that need it, with
    a warning, never accepts one) and parsed by PyJWT: fetched once, cached
    (``jwks_cache_seconds``), and refetched when a token names a ``kid`` the cache lacks (a
    key rotation), at most once per ``refresh_cooldown`` seconds (so tokens with made-up
    kids cannot make this server hammer the authorization server); at most
    ``max_cached_keys`` parsed keys are held. A fetch never holds up a token whose key is
    cached (see :mod:`~mcpsync.auth.server.jwks`). Needs PyJWT with ``cryptography``
    (``pip install 'mcpsync[auth]'``).
    """

    def __init__(self, jwks_url: str, *, issuer: str, audience: str | Iterable[str],
                 algorithms: Iterable[str] = ("RS256", "ES256"), leeway: float = 60.0,
                 timeout: float = 10.0, jwks_cache_seconds: int = 300,
                 max_cached_keys: int = 16, refresh_cooldown: float = 10.0,
                 max_jwks_bytes: int = DEFAULT_MAX_JWKS_BYTES,
                 anonymous_principal: AnonymousPrincipal = "refuse") -> None:
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
        check_anonymous_mode(anonymous_principal)
        self._jwt = jwt
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.algorithms = allowed
        self.leeway = leeway
        self.timeout = timeout
        self.anonymous_principal: AnonymousPrincipal = anonymous_principal
        self._keys = KeySet(jwks_url, timeout=timeout, max_bytes=max_jwks_bytes,
                            lifespan=jwks_cache_seconds, max_keys=max_cached_keys,
                            cooldown=refresh_cooldown)

    def verify(self, token: str) -> AccessToken | None:
        jwt = self._jwt
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = (self._keys.signing_key(kid, Deadline(self.timeout, "JWKS fetch"))
                   if isinstance(kid, str) else None)
            if key is None:
                logger.debug("mcpsync: bearer token refused: no key for its kid")
                return None
            # The time claims are checked below, by the function both verifiers share.
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=list(self.algorithms), audience=self.audience,
                issuer=self.issuer, options={"require": ["exp", "iss", "aud"],
                                             "verify_exp": False, "verify_nbf": False,
                                             "verify_iat": False})
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            logger.debug("mcpsync: bearer token refused: %s", type(exc).__name__)
            return None
        refused = time_claims_refusal(claims, self.leeway, require_exp=True)
        if refused is not None:
            logger.debug("mcpsync: bearer token refused: %s", refused)
            return None
        return identify(token, claims, claims.get("sub"),
                        claims.get("client_id", claims.get("azp")),
                        self.anonymous_principal, audience_of(claims))


def expired(token: AccessToken, now: float | None = None) -> bool:
    """Whether ``token`` is past its ``expires_at`` (a verifier of opaque tokens may
    return one without checking)."""
    import time

    return token.expires_at is not None and token.expires_at < (now or time.time())
