"""The HMAC key of a server's MRTR ``requestState`` (see ``Server.request_state_key``).

Apart from ``server.py`` because it is configuration, not the server's definition: the
key comes from ``Server(request_state_key=...)``, else the environment, else (with a
warning) is made up for this process alone.
"""

from __future__ import annotations

import os
import warnings


def resolve_state_key(key: bytes | str | None) -> bytes:
    """``key`` as bytes; ``None``: ``MCPSYNC_REQUEST_STATE_KEY``, else a random per-process
    key, with a warning (multi round-trip requests then only work while every retry
    reaches this process)."""
    if key is None:
        key = os.environ.get("MCPSYNC_REQUEST_STATE_KEY")
    if key is None:
        warnings.warn(
            "no request_state_key: using a random per-process key, so multi round-trip "
            "requests only work when every retry reaches this process. Set "
            "Server(request_state_key=...) or MCPSYNC_REQUEST_STATE_KEY for several workers.",
            stacklevel=2,
        )
        return os.urandom(32)  # what secrets.token_bytes reads, without importing random
    return key.encode("utf-8") if isinstance(key, str) else key
