"""The time claims of an access token (``exp``, ``nbf``, ``iat``), checked one way for
every verifier.

A JWT's claims and an introspection answer's (RFC 7662 uses the JWT claim names) mean the
same thing, so :class:`~mcpsync.auth.server.JwtVerifier` and
:class:`~mcpsync.auth.server.IntrospectionVerifier` both call :func:`time_claims_refusal`
rather than each keeping its own reading (the introspection verifier used to ignore an
``nbf`` in the future). ``leeway`` is the clock skew allowed between this server and the
authorization server, in seconds, in each direction:

- ``exp``: refused when ``exp <= now - leeway`` (it has passed, allowing for skew); a
  ``JwtVerifier`` requires it, an introspection answer may leave it out.
- ``nbf``: refused when ``nbf > now + leeway`` (not valid yet).
- ``iat``: refused when ``iat > now + leeway`` (issued in the future: a clock far off, or
  a forged token).

Each present claim must be a number (an integer or a float, never a boolean or a string),
as RFC 7519's NumericDate is; anything else refuses the token.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def time_claims_refusal(claims: Mapping[str, Any], leeway: float, *, require_exp: bool,
                        now: float | None = None) -> str | None:
    """Why the token's time claims refuse it (a short phrase for the server's debug log,
    never shown to the client), or ``None`` when they allow it at ``now`` (default: the
    current time)."""
    moment = time.time() if now is None else now
    for name in ("exp", "nbf", "iat"):
        if name in claims and not _numeric(claims[name]):
            return f"its {name} is not a number"
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    if exp is None and require_exp:
        return "it has no exp"
    if exp is not None and exp <= moment - leeway:
        return "it has expired"
    if nbf is not None and nbf > moment + leeway:
        return "it is not valid yet (nbf)"
    if iat is not None and iat > moment + leeway:
        return "it was issued in the future (iat)"
    return None
