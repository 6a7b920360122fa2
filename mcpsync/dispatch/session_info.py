"""What a server knows of the client on the other end of a request: :class:`SessionInfo`.

Its own module because two sides read it that must not read each other: the handler
context (``context.py``) and the requests it sends back (``reverse.py``, which gets the
context's session info and its outlet port, never the context itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SessionInfo:
    """What is known about the peer on the other end of a request.

    In the handshake era it comes from ``initialize`` and lasts the session; in the
    stateless era it comes from each request's ``_meta``.
    """

    protocol_version: str | None = None
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None

    def supports(self, capability: str, sub: str | None = None) -> bool:
        """Whether the client declared ``capability`` (and ``sub`` inside it)."""
        value = self.client_capabilities.get(capability)
        if not isinstance(value, dict):
            return False
        return sub is None or bool(value.get(sub))
