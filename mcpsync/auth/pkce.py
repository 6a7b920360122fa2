"""PKCE (RFC 7636) with ``S256``: a fresh verifier per authorization request.

The verifier is 43+ characters of the unreserved alphabet drawn from ``secrets``; the
challenge is ``BASE64URL(SHA256(verifier))`` without padding, computed by ``hashlib``.
``plain`` is never used: OAuth 2.1 and MCP require ``S256``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class PKCE:
    """One verifier and its ``S256`` challenge. The verifier is kept out of ``repr``."""

    verifier: str = field(repr=False)

    @classmethod
    def new(cls) -> PKCE:
        # 48 random bytes -> 64 base64url characters (RFC 7636 allows 43..128).
        return cls(_b64url(secrets.token_bytes(48)))

    @property
    def challenge(self) -> str:
        return s256(self.verifier)

    method = "S256"


def s256(verifier: str) -> str:
    """The ``S256`` code challenge of ``verifier``."""
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """An unguessable ``state`` value for one authorization request."""
    return secrets.token_urlsafe(32)
