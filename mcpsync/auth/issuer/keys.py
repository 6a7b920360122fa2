"""Signing keys: the newest signs, every key still needed is published, keys rotate.

The keys live in the store, so every worker signs with the same key and publishes the
same set. A key signs for ``rotate_after`` seconds; then a new one is made (by whichever
worker first notices) and the old one stays published (``keep`` keys in all) so tokens it
signed verify until they expire: ``keep * rotate_after`` must exceed the access token
lifetime, which the server checks. Keys are ES256 (P-256), PyJWT signs.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from .store import IssuerStore, KeyRecord

#: Seconds this process trusts its copy of the key list before reading the store again.
KEY_CACHE_SECONDS = 30.0


def new_key(now: float) -> KeyRecord:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return KeyRecord(kid=uuid.uuid4().hex, private_pem=pem, created_at=now)


def public_jwk(key: KeyRecord) -> dict[str, Any]:
    private = serialization.load_pem_private_key(key.private_pem.encode(), None)
    public = private.public_key()
    if not isinstance(public, ec.EllipticCurvePublicKey):
        raise ValueError(f"signing key {key.kid} is not an EC key")
    jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(public, as_dict=True)
    jwk.update(kid=key.kid, use="sig", alg="ES256")
    return jwk


class KeyRing:
    """The store's signing keys, cached for :data:`KEY_CACHE_SECONDS`."""

    def __init__(self, store: IssuerStore, *, rotate_after: float, keep: int = 3) -> None:
        self.store = store
        self.rotate_after = rotate_after
        self.keep = keep
        self._lock = threading.Lock()
        self._keys: list[KeyRecord] = []
        self._read_at = -KEY_CACHE_SECONDS

    def _current(self) -> list[KeyRecord]:
        with self._lock:
            if time.monotonic() - self._read_at < KEY_CACHE_SECONDS and self._keys:
                keys = self._keys
                if time.time() - keys[0].created_at < self.rotate_after:
                    return keys
        keys = self.store.signing_keys()
        if not keys or time.time() - keys[0].created_at >= self.rotate_after:
            self.store.add_key(new_key(time.time()), keep=self.keep)
            keys = self.store.signing_keys()
        with self._lock:
            self._keys, self._read_at = keys, time.monotonic()
        return keys

    def rotate(self) -> None:
        """Make a new signing key now (the old ones stay published)."""
        self.store.add_key(new_key(time.time()), keep=self.keep)
        with self._lock:
            self._read_at = -KEY_CACHE_SECONDS

    def sign(self, claims: dict[str, Any]) -> str:
        key = self._current()[0]
        return jwt.encode(claims, key.private_pem, algorithm="ES256",
                          headers={"kid": key.kid, "typ": "at+jwt"})

    def jwks(self) -> dict[str, Any]:
        """Every key in the store, read afresh: a key another worker just made must be
        published by this one too, before a resource server sees a token it signed."""
        keys = self.store.signing_keys() or self._current()
        return {"keys": [public_jwk(key) for key in keys]}
