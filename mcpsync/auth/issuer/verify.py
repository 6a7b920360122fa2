"""Verifying this server's own tokens where the store is at hand (same deployment).

A resource server elsewhere verifies the JWTs with ``JwtVerifier`` and the published
JWKS, and learns of a revocation only when the access token expires (10 minutes by
default). A resource server in the same deployment can do better:
:class:`IssuerVerifier` checks the signature against the store's keys (no HTTP), the
audience, and that the token's grant is still live, so "revoke" on the user's page or at
``/revoke`` ends the access at once. Opaque tokens can only be verified here.
"""

from __future__ import annotations

import time
from typing import Any

import jwt

from ..server.claims import time_claims_refusal
from ..server.verify import AccessToken, audience_of, identify
from .keys import public_jwk
from .store import IssuerStore, secret_hash

__all__ = ["IssuerVerifier", "decode_own"]


def decode_own(store: IssuerStore, issuer: str, token: str,
               audience: str | None) -> dict[str, Any] | None:
    """The claims of a JWT signed by a key of ``store`` for ``issuer`` (``aud`` checked
    when ``audience`` is given), or ``None``."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
        key = next((k for k in store.signing_keys() if k.kid == kid), None)
        if key is None:
            return None
        public = jwt.PyJWK(public_jwk(key)).key
        claims: dict[str, Any] = jwt.decode(
            token, public, algorithms=["ES256"], issuer=issuer,
            audience=audience, options={"require": ["exp", "iss", "aud"],
                                        "verify_aud": audience is not None})
    except (jwt.PyJWTError, ValueError, TypeError):
        return None
    return claims


class IssuerVerifier:
    """A :class:`~mcpsync.auth.server.TokenVerifier` for the tokens ``issuer`` keeps in
    ``store`` (``token_format`` ``"jwt"`` or ``"opaque"``) at ``resource``; revoked
    grants are refused at once."""

    def __init__(self, store: IssuerStore, issuer: str, token_format: str,
                 resource: str) -> None:
        self.store = store
        self.issuer = issuer
        self.token_format = token_format
        self.resource = resource

    def verify(self, token: str) -> AccessToken | None:
        if self.token_format == "jwt":
            claims = decode_own(self.store, self.issuer, token, self.resource)
            if claims is None or time_claims_refusal(claims, 60.0, require_exp=True):
                return None
            grant = self.store.get_grant(str(claims.get("grant_id", "")))
            if grant is None or grant.revoked:
                return None
            return identify(token, claims, claims.get("sub"), claims.get("client_id"),
                            "refuse", audience_of(claims))
        record = self.store.get_token(secret_hash(token), time.time())
        if record is None or record.kind != "access":
            return None
        grant = self.store.get_grant(record.grant_id)
        if grant is None or grant.revoked or grant.resource != self.resource:
            return None
        claims = {**grant.claims, "iss": self.issuer, "sub": grant.subject,
                  "client_id": grant.client_id, "scope": grant.scope,
                  "aud": grant.resource, "exp": record.expires_at}
        return identify(token, claims, grant.subject, grant.client_id, "refuse",
                        (grant.resource,))
