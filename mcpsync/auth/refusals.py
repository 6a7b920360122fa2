"""Reading a refused response, for :class:`~mcpsync.auth.OAuth`'s response hook.

Whether a 401/403 is a challenge the client can answer (a Bearer or DPoP one: not a
proxy's Basic, not a 403 that asks for no scope), which token the refused request
carried, how its body is dropped so that the connection can be reused, and whether a
resend failed only because the server had closed the kept-alive connection meanwhile.
"""

from __future__ import annotations

from typing import Final

import requests

from .challenge import Challenge, parse
from .fetch import FETCH_ERRORS

#: How much of a refused response's body is read before it is dropped (bytes).
DRAIN_BYTES: Final = 64 * 1024


def challenge_of(response: requests.Response) -> Challenge | None:
    """The challenge of a response the client should answer, else None."""
    header = response.headers.get("WWW-Authenticate")
    if response.status_code == 401:
        if header and "bearer" not in header.lower() and "dpop" not in header.lower():
            return None  # another scheme's challenge (a proxy's Basic): not ours
        return parse(header)
    if response.status_code == 403:
        challenge = parse(header)
        return challenge if challenge.insufficient_scope else None
    return None


def token_sent(request: requests.PreparedRequest) -> str | None:
    """The access token ``request`` carried (``Bearer`` or ``DPoP``), if any."""
    value = request.headers.get("Authorization")
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if value and value[:7].lower() == "bearer ":
        return value[7:]
    if value and value[:5].lower() == "dpop ":
        return value[5:]
    return None


def drain(response: requests.Response) -> None:
    """Read a little of the body (so the connection may go back to the pool), then close."""
    try:
        if response.raw is not None:
            response.raw.read(DRAIN_BYTES, decode_content=False)
    except FETCH_ERRORS:
        pass
    response.close()


def stale_connection(exc: requests.ConnectionError) -> bool:
    """True when the server dropped a kept-alive connection without answering (reset or
    closed at once), as opposed to being unreachable or timing out."""
    text = repr(exc)
    return any(sign in text for sign in ("Connection aborted", "RemoteDisconnected",
                                         "ConnectionResetError", "BrokenPipeError"))
