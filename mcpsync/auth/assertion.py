"""``private_key_jwt`` client authentication (RFC 7523 §2.2) with PyJWT.

PyJWT (with ``cryptography``) comes with the ``auth`` extra; it is imported here, when a
key is first used, so that mcpsync imports without it. No signing code is written here.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Final

from .errors import MissingDependencyError

ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: How long one client assertion is valid (seconds); one is made per token request.
ASSERTION_LIFETIME: Final = 300


def jwt_library() -> Any:
    """PyJWT, or :class:`MissingDependencyError` saying how to install it."""
    try:
        import jwt
    except ImportError:
        raise MissingDependencyError(
            "private_key_jwt needs PyJWT with cryptography: pip install 'mcpsync[auth]'"
        ) from None
    return jwt


def client_assertion(client_id: str, audience: str, private_key_pem: str,
                     algorithm: str) -> str:
    """A signed assertion: ``iss`` = ``sub`` = the client id, ``aud`` = the authorization
    server's issuer, a short expiry and a unique ``jti``."""
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
              "exp": now + ASSERTION_LIFETIME, "jti": str(uuid.uuid4())}
    token: str = jwt_library().encode(claims, private_key_pem, algorithm=algorithm)
    return token
