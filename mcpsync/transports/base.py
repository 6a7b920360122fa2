"""The transport interface the engine drives.

A transport moves whole messages. It frames, encodes and decodes; it knows nothing of
tools or sessions. ``send`` may be called from several threads at once only under the
engine's write lock, so implementations need not lock themselves; ``receive`` is called from
one reader thread.
"""

from __future__ import annotations

from typing import Protocol

from ..protocol.jsonrpc import Invalid, Message, RequestId

Received = Message | Invalid


class Transport(Protocol):
    """What a connection needs from a transport."""

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        """Write one message. ``related_request_id`` names the inbound request it belongs to
        (HTTP routes it onto that request's stream; stdio ignores it).
        Raises ``ConnectionClosedError`` when the transport is closed."""
        ...

    def receive(self) -> Received | None:
        """Block until a message arrives; ``None`` at end of stream (the peer went away)."""
        ...

    def close(self) -> None:
        """Release the transport. Idempotent; makes a blocked ``receive`` return ``None``."""
        ...
