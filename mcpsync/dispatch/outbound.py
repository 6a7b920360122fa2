"""The outbound channel: what a request's handler needs to talk back to its peer.

It exists so that everything a :class:`~mcpsync.dispatch.context.HandlerContext` sends
through is one typed thing. The engine's ``Connection`` satisfies it, and so do the
channels that are not a connection: a 2026-07-28 HTTP request's own response stream and
the stateless view of a session (which may ask only its request's input questions).
Before, those were duck-typed stand-ins passed where a ``Connection`` was declared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..protocol.jsonrpc import RequestId


class OutboundChannel(Protocol):
    """Sends notifications and requests to the peer a request came from.

    ``related_request_id`` routes a message with the request it belongs to (its HTTP
    stream); ``parent`` is the inbound request a reverse request serves (cancelled with it).
    A channel that cannot send requests raises ``ProtocolStateError`` from ``request``.
    """

    def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None: ...

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        parent: RequestId | None = None,
        related_request_id: RequestId | None = None,
    ) -> dict[str, Any]: ...
