"""A 2026-07-28 request on HTTP: its checks, and the exchange it is served in.

In the modern era a POST is the whole exchange: the handler's notifications go to that
request's own response stream and it may send no requests. :func:`serve` checks the
request's ``_meta`` envelope and its mirrored headers against the body, runs it through
the app's inbound executor (on the app's pool for the methods that may stream progress)
and answers it. The request's :class:`_Exchange` is what the stateless dispatcher sees in
place of a session's connection (``OutboundChannel``) and the session itself
(``StatelessHost``), one object for both.
All of it lives apart from the app's routing in ``wsgi.py``, and takes the app's
:class:`~mcpsync.http.services.Services`, not the app.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from functools import partial
from typing import Any, Final

from ..dispatch.inbound import InboundExecutor, TransportContext
from ..engine.pool import PoolFullError
from ..engine.requests import InboundRequest
from ..errors import (
    INTERNAL_ERROR,
    ConnectionClosedError,
    MCPError,
    ProtocolStateError,
)
from ..protocol import jsonrpc
from ..protocol.envelope import Envelope, check_envelope
from ..protocol.jsonrpc import Message, Notification, Request
from ..protocol.methods import VIEWS
from ..server import stateless
from ..server.dispatcher import Dispatcher
from ..server.host import RequestServer
from ..server.mount import mounted_tool
from ..server.tools import RegisteredTool
from .intake import HttpRequest
from .replies import StartResponse, _HttpError, respond
from .services import Services
from .streams import ResponseStream

#: Methods whose handlers run on a handler thread, so their progress streams live (the
#: method table's 2026-07-28 rows that may stream or block).
_THREADED: Final = VIEWS.threaded_modern
#: Methods whose handler is a registered tool's.
_TOOL_METHODS: Final = VIEWS.tool_methods


class _Exchange:
    """One 2026-07-28 request on HTTP while it is served: the host a stateless request runs
    in (``server.stateless.StatelessHost``: the server, its channel, ``ended``), that
    channel itself (``dispatch.outbound.OutboundChannel``: notifications go, through the
    send middleware, to the request's own response stream; it can send no requests), and
    the run of the request's handler (:meth:`run`). One object per request, holding no
    reference to its ``InboundRequest`` (which holds it): no cycle for the collector."""

    def __init__(self, server: RequestServer, dispatcher: Dispatcher, stream: ResponseStream,
                 executor: InboundExecutor, transport: TransportContext) -> None:
        self.server = server
        self._dispatcher = dispatcher
        self._stream = stream
        self._executor = executor
        self._transport = transport

    # -- the host ---------------------------------------------------------------------

    @property
    def connection(self) -> _Exchange:
        return self

    @property
    def ended(self) -> threading.Event:
        return self._stream.consumer_gone  # made only if a handler asks

    # -- the channel ------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any] | None = None, **_: Any) -> None:
        if self._stream.gone:
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

    # -- the run ----------------------------------------------------------------------

    def run(self, inbound: InboundRequest, checked: Envelope | None) -> None:
        """Run the handler (on this thread or a pool's) and put its answer on the stream,
        which ends either way. ``checked``: the request's envelope, already checked."""
        self._executor.settle(inbound, partial(
            stateless.serve, self, self._dispatcher, inbound, checked), self._deliver)

    def _deliver(self, inbound: InboundRequest, out: Message | None) -> None:
        inbound.done = True
        stream = self._stream
        try:
            if out is not None:
                self.answer(out)
        finally:
            if not stream.finished:  # no answer, or send middleware dropped it
                stream.end()


def serve(services: Services, http: HttpRequest,
          start_response: StartResponse) -> Iterable[bytes]:
    """Check and serve one 2026-07-28 request (the one message of ``http``, which the
    app's intake has read and checked); its answer is JSON or an SSE stream."""
    message = http.items[0]
    transport = http.transport
    assert transport is not None
    if isinstance(message, Notification):
        # Nothing to route it to without a session, but middleware sees it.
        services.executor().receive(message, transport, lambda _: None, lambda _: None)
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]
    assert isinstance(message, Request)
    headers = http.headers
    # The envelope and its headers, checked once, here: a refused request costs no
    # thread and runs no middleware (the stateless server takes the envelope as checked).
    params = message.params or {}
    server = services.server
    # The server's own tool a tools/call names (looked up once: its header map, whether it
    # may be hidden, whether it runs on this thread all come from it).
    tool = (server.tools.get(str(params.get("name"))) if message.method in _TOOL_METHODS
            else None)
    # A mounted server's tool is checked as the parent's own (a proxied one by its proxy,
    # which learns its map from the remote: proxy/param_headers.py).
    description = tool.description if tool is not None else (
        mounted_tool(server._mounts, str(params.get("name"))) if message.method in _TOOL_METHODS
        else None)
    versions = server.protocol.modern_versions
    held: MCPError | None = None
    try:
        envelope = check_envelope(
            message.method, params, versions, headers=headers,
            tool_headers=tool.header_map if tool is not None else (
                None if description is None else services.header_maps.get(description)))
    except MCPError as exc:
        # A tool some callers may not see (the server's own while it hides something from
        # someone; a mounted one, whose server decides): its Mcp-Param-* refusal waits for
        # the tool's lookup in its registry, where the caller is known, so a hidden tool
        # answers as an unknown one (the rest of the envelope is still checked here).
        if description is None or (tool is not None and server.tools.gate is None):
            raise _HttpError(exc.code, exc.message, message.id, exc.data) from None
        try:
            envelope = check_envelope(message.method, params, versions, headers=headers)
        except MCPError as other:
            raise _HttpError(other.code, other.message, message.id, other.data) from None
        held = exc
    stream = ResponseStream(final_id=message.id)
    executor = services.executor()
    if held is not None:
        transport.refusal = held
    exchange = _Exchange(server, server._dispatcher, stream, executor, transport)
    if executor.receives_as_is:
        request = message  # what the receive step would route, unchanged
    else:
        # The same path as every other transport's: receive middleware on this thread
        # (the engine's reader runs it on its own), the handler on the pool.
        routed = _receive(executor, message, transport, exchange)
        if routed is None:
            if not stream.finished:  # the send middleware dropped the refusal: no answer
                stream.end()
            return respond(services.pacing, start_response, stream, http.accepts,
                           modern=True)
        request = routed
    inbound = InboundRequest(exchange, request.id, request.method, request.params or {},
                             transport)
    # A receive middleware that put another request in its place gets it checked anew.
    checked = envelope if request is message else None
    if request.method in _THREADED and not _runs_here(
            tool if request is message else server.tools.get(
                str((request.params or {}).get("name"))), request):
        try:
            services.pool.submit(partial(exchange.run, inbound, checked))
        except (PoolFullError, RuntimeError) as exc:
            raise _HttpError(INTERNAL_ERROR,
                             f"Server busy: {exc}", request.id) from None
    else:
        exchange.run(inbound, checked)

    # Closing a 2026-07-28 request's stream before its answer cancels the request.
    return respond(services.pacing, start_response, stream, http.accepts, modern=True,
                   cancel=inbound.cancelled)


def _receive(executor: InboundExecutor, message: Request, transport: TransportContext,
             channel: _Exchange) -> Request | None:
    """``message`` through the receive middleware: the request to serve (a middleware may
    have put another in its place), or ``None`` when a middleware refused it (its answer
    went to the stream). A request dropped without an answer is refused here."""
    accepted: list[Request] = []
    refused: list[Message] = []

    def route(passed: Message) -> None:
        if isinstance(passed, Request):
            accepted.append(passed)

    def reply(answer: Message) -> None:
        refused.append(answer)
        channel.answer(answer)

    executor.receive(message, transport, route, reply)
    if accepted:
        return accepted[0]
    if not refused:
        raise _HttpError(INTERNAL_ERROR, "The server dropped the request without an answer",
                         message.id)
    return None


def _runs_here(tool: RegisteredTool | None, message: Request) -> bool:
    """Whether a request of a threaded method runs on the request's own thread: a call of a
    tool without a context parameter, which can neither report progress nor see
    cancellation, so a hand-off to the pool would buy nothing."""
    return tool is not None and tool.context_free and message.method in _TOOL_METHODS
