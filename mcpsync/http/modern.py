"""The channel and host a 2026-07-28 request is served in on HTTP.

In the modern era a POST is the whole exchange: the handler's notifications go to that
request's own response stream and it may send no requests. These are what the stateless
dispatcher sees in place of a session's connection (``OutboundChannel``) and the session
itself (``StatelessHost``); they live apart from the app's routing in ``wsgi.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..dispatch.inbound import InboundExecutor
from ..dispatch.transport import TransportContext
from ..errors import ConnectionClosedError, ProtocolStateError
from ..protocol import jsonrpc
from ..protocol.jsonrpc import Message, Notification
from .streams import ResponseStream

if TYPE_CHECKING:
    from ..server.server import Server


class _RequestChannel:
    """The outbound channel (``dispatch.outbound.OutboundChannel``) a 2026-07-28 handler
    sees on HTTP: notifications go, through the send middleware, to its own response
    stream; it can send no requests."""

    def __init__(self, stream: ResponseStream, executor: InboundExecutor,
                 transport: TransportContext) -> None:
        self._stream = stream
        self._executor = executor
        self._transport = transport

    def notify(self, method: str, params: dict[str, Any] | None = None, **_: Any) -> None:
        if self._stream.consumer_gone.is_set():
            raise ConnectionClosedError(f"cannot send {method}: the client closed the stream")
        self._executor.send(Notification(method, params), self._transport, self._write)

    def answer(self, message: Message) -> None:
        """The request's answer, through the send middleware, onto its stream."""
        self._executor.send(message, self._transport, self._stream.put)

    def _write(self, message: Message) -> None:
        if isinstance(message, Notification):
            jsonrpc.encode(message)  # raises UnencodableMessageError here, to the sender
        self._stream.put(message)

    def request(self, method: str, params: dict[str, Any] | None = None,
                **_: Any) -> dict[str, Any]:
        raise ProtocolStateError(f"cannot send {method}: a 2026-07-28 server sends no requests")


class _RequestHost:
    """The host (``server.stateless.StatelessHost``) a stateless request is served in: the
    server and the request's stream."""

    def __init__(self, server: Server, channel: _RequestChannel,
                 stream: ResponseStream) -> None:
        self.server = server
        self.connection = channel
        self.ended = stream.consumer_gone
