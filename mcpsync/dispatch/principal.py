"""One opaque key per authenticated principal, for everything bound to whoever created it.

A handshake-era session record, a 2026-07-28 ``requestState`` and a task are each bound to
the principal that made them, and each may be checked by another worker than the one that
made it. So the binding must be a stable, shared key, never the principal object itself
(another process has a different one) and never the token (stores must not hold secrets).
"""

from __future__ import annotations

import json
from typing import Any

_FIELDS = ("subject", "sub", "client_id", "principal", "name")

#: Who a verified access token stands for: its ``principal`` (issuer, subject, client; or
#: issuer, None, None and the token's own key: :attr:`mcpsync.auth.server.AccessToken.principal`).
#: An HTTP session belongs to one (``None`` without ``auth=``).
Principal = tuple[str | None, ...]


def principal_key(auth: Any) -> str:
    """``""`` for no principal; else a hex key that two workers derive alike.

    An :class:`~mcpsync.auth.server.AccessToken` is identified by its ``principal``
    (issuer, subject, client id; for a token accepted with
    ``anonymous_principal="per-token"``, issuer and the token's own key, a tuple of
    another length, so it never equals a named principal's key). A token naming nobody
    at all never gets here from the resource server: it is refused, since every such
    token of an issuer would have the one key. Any other auth object by its first identifying field
    among ``subject``, ``sub``, ``client_id``, ``principal``, ``name`` (attribute or mapping
    key), else by its ``str``, which must then be stable across requests."""
    if auth is None:
        return ""
    identity: Any = getattr(auth, "principal", None)
    if not isinstance(identity, tuple):
        identity = str(auth)
        for name in _FIELDS:
            value = auth.get(name) if isinstance(auth, dict) else getattr(auth, name, None)
            if isinstance(value, str) and value:
                identity = f"{name}={value}"
                break
    import hashlib  # (OpenSSL is loaded by the first principal, not at a server's start-up)

    return hashlib.sha256(json.dumps(identity).encode("utf-8", "replace")).hexdigest()[:32]
