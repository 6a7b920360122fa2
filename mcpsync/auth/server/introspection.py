"""``IntrospectionVerifier``: opaque access tokens checked by asking the authorization
server (RFC 7662), one bounded fetch per token."""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Iterable
from urllib.parse import quote

from ..fetch import FETCH_ERRORS, Fetcher
from .claims import time_claims_refusal
from .verify import AccessToken, AnonymousPrincipal, audience_of, check_anonymous_mode, identify

logger = logging.getLogger("mcpsync.auth.server")


class IntrospectionVerifier:
    """Verifies opaque access tokens by asking the authorization server (RFC 7662 token
    introspection) at ``introspection_url``, authenticated as ``client_id`` /
    ``client_secret`` (HTTP Basic, the RFC's default; give neither for a server that does
    not ask).

    A token is good when the answer says ``active: true``, its time claims allow it
    (``exp`` if any is not past, ``nbf`` and ``iat`` are not in the future, each with
    ``leeway`` seconds of skew, exactly as :class:`~mcpsync.auth.server.JwtVerifier`
    checks them), its ``iss`` is ``issuer`` (when given) and its ``aud`` names
    ``audience`` (when given: this resource's URL; give it unless the authorization
    server only introspects tokens meant for you). An answer naming neither ``sub`` nor
    ``client_id`` (both optional in RFC 7662) is refused unless
    ``anonymous_principal="per-token"`` (see :func:`~mcpsync.auth.server.verify.identify`).
    Each call ends within ``timeout`` seconds (connect, head and body together) and reads
    at most ``max_response_bytes``; an unreachable, unreadable or too slow server refuses
    the token. Answers are not cached: every request costs one introspection (put a cache
    in a verifier of your own if that is too many).
    """

    def __init__(self, introspection_url: str, *, client_id: str | None = None,
                 client_secret: str | None = None, issuer: str | None = None,
                 audience: str | Iterable[str] | None = None, leeway: float = 60.0,
                 timeout: float = 10.0, max_response_bytes: int = 64 * 1024,
                 anonymous_principal: AnonymousPrincipal = "refuse") -> None:
        check_anonymous_mode(anonymous_principal)
        self.introspection_url = introspection_url
        self._credentials = (client_id, client_secret or "") if client_id else None
        self.issuer = issuer
        self.audience = ([audience] if isinstance(audience, str)
                         else list(audience) if audience is not None else None)
        self.leeway = leeway
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.anonymous_principal: AnonymousPrincipal = anonymous_principal
        # requests.Session is not documented as thread-safe: one per WSGI thread.
        self._local = threading.local()

    def _fetcher(self) -> Fetcher:
        fetcher: Fetcher | None = getattr(self._local, "fetcher", None)
        if fetcher is None:
            fetcher = self._local.fetcher = Fetcher(self.timeout, self.max_response_bytes)
        return fetcher

    def verify(self, token: str) -> AccessToken | None:
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
        refused = time_claims_refusal(claims, self.leeway, require_exp=False)
        if refused is not None:
            logger.debug("mcpsync: bearer token refused: %s", refused)
            return None
        if self.issuer is not None and claims.get("iss") != self.issuer:
            return None
        audience = audience_of(claims)
        if self.audience is not None and not set(self.audience) & set(audience):
            return None
        return identify(token, claims, claims.get("sub"), claims.get("client_id"),
                        self.anonymous_principal, audience)
