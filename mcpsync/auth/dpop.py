"""DPoP (RFC 9449): access tokens bound to a key the client holds.

When the authorization server lists ES256 in ``dpop_signing_alg_values_supported`` (and
PyJWT, the ``auth`` extra, is installed), :class:`~mcpsync.auth.OAuth` makes one P-256 key
per OAuth object, sends a proof of it with each token request, and presents the DPoP token
as ``Authorization: DPoP <token>`` with a fresh proof (``htm``, ``htu``, ``iat``, a unique
``jti`` and ``ath``, the token's hash) on every request. A server that answers
``use_dpop_nonce`` with a ``DPoP-Nonce`` header gets the request again with that nonce
(the token endpoint, RFC 9449 §8; the MCP server, §9). Signing and key generation are
PyJWT's and ``cryptography``'s.

The key lives in memory only: a DPoP-bound token is useless without it, so such tokens
are not written to the token storage (a new process authorizes again).
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import uuid
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from .assertion import jwt_library

ALGORITHM: Final = "ES256"
#: Distinct ``DPoP-Nonce`` values kept (one per server origin, the latest wins).
MAX_NONCES: Final = 256


def _htu(url: str) -> str:
    """The proof's ``htu``: the request URI without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class DPoPKey:
    """One proof-of-possession key and the nonces servers gave for it. Thread-safe."""

    def __init__(self) -> None:
        jwt = jwt_library()
        from cryptography.hazmat.primitives.asymmetric import ec

        self._key = ec.generate_private_key(ec.SECP256R1())
        self._jwk: dict[str, Any] = dict(
            jwt.algorithms.ECAlgorithm.to_jwk(self._key.public_key(), as_dict=True))
        self._nonces: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "DPoPKey(ES256)"

    def remember_nonce(self, url: str, nonce: str | None) -> bool:
        """Keep a server's ``DPoP-Nonce``; True when it is new."""
        if not nonce or len(nonce) > 1024:
            return False
        origin = _origin(url)
        with self._lock:
            if self._nonces.get(origin) == nonce:
                return False
            self._nonces.pop(origin, None)
            self._nonces[origin] = nonce
            while len(self._nonces) > MAX_NONCES:
                self._nonces.pop(next(iter(self._nonces)))
            return True

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        claims: dict[str, Any] = {"jti": str(uuid.uuid4()), "htm": method.upper(),
                                  "htu": _htu(url), "iat": int(time.time())}
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        with self._lock:
            nonce = self._nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        token: str = jwt_library().encode(claims, self._key, algorithm=ALGORITHM,
                                          headers={"typ": "dpop+jwt", "jwk": self._jwk})
        return token


def available() -> bool:
    """True when PyJWT (with ``cryptography``) can be imported."""
    try:
        jwt_library()
    except ImportError:
        return False
    return True
