"""One JSON-RPC connection: the threaded engine shared by server and client.

Anatomy (both directions use the same machinery):

* a **reader thread** (``{name}-reader``) receives messages, runs the receive middleware
  and routes them; it never runs callbacks (receive middleware must be quick and must not
  block on the peer, or nothing more is read);
* inbound **requests** run on a bounded :class:`~mcpsync.threads.pool.WorkerPool`, or, on
  a connection given ``inline_key`` (a server session), those not known to be slow run on
  the reader thread itself, after the receive middleware: no thread hand-off per call.
  A leader/follower reader (:mod:`mcpsync.engine.inline`) keeps that from stalling the
  stream: a run that lasts a millisecond, or asks the peer something, gets another
  thread to read in its place (:mod:`mcpsync.engine.inflight`);
* on a client connection over stdio, a caller whose answer nobody is reading reads it
  itself, routing all it reads as the reader thread would, which saves two thread
  wake-ups per call (:mod:`mcpsync.engine.reading`);
* inbound **notifications** and progress callbacks run in arrival order on one
  ``{name}-notify`` thread, behind a queue bounded in count and bytes: past it new ones
  are dropped with one warning per burst, so a slow callback can not make a chatty peer
  cost unbounded memory (:mod:`mcpsync.engine.reading`);
* outbound **requests** wait on a :class:`~concurrent.futures.Future` in the
  :class:`~mcpsync.engine.outbound.PendingTable`, always with a deadline
  (:mod:`mcpsync.engine.outbound`);
* writes are serialized by one write lock held only around ``transport.send``
  (:mod:`mcpsync.engine.writer`);
* what happens to a message between the transport and the handler (middleware, the
  handler call, the one exception→wire mapping, each with the message's TransportContext
  bound) is :class:`~mcpsync.dispatch.inbound.InboundExecutor`'s, as in the HTTP app.

:class:`Connection` composes those parts, routes each message to the one it concerns, and
ends them all, once (:class:`~mcpsync.engine.writer.Closing`). It is thread-safe: any
thread may call :meth:`request`, :meth:`notify` and :meth:`close` at any time.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Final

from ..dispatch.inbound import InboundExecutor, TransportContext, bound, current_transport
from ..dispatch.inbound import Middleware as Middleware  # where server and client import it
from ..dispatch.inbound import compose as compose  # the engine's name for it, kept
from ..errors import ConnectionClosedError
from ..protocol.bookkeeping import cancelled_request_id
from ..protocol.deadline import Deadline
from ..protocol.jsonrpc import (
    ErrorResponse,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from ..telemetry.attributes import peer_of
from ..telemetry.instrumentation import Instrumentation
from ..threads.pool import WorkerPool
from ..transports.base import CallFailed, Received, Transport
from .hooks import NO_EVENTS, OWN_THREADS, ConnectionEvents, ConnectionThreads
from .hooks import NotificationHandler as NotificationHandler
from .inflight import InflightRequests, RequestHandler
from .limits import DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES as DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES
from .limits import DEFAULT_MAX_QUEUED_NOTIFICATIONS as DEFAULT_MAX_QUEUED_NOTIFICATIONS
from .limits import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT  # where the client imports these 3
from .limits import ConnectionLimits as ConnectionLimits  # where client and server do
from .outbound import Outbound, PendingTable, ProgressCallback
from .reading import Notifications, Reading
from .requests import InboundRequest as InboundRequest  # benchmarks import it from here
from .requests import Routed
from .writer import Closing, Writer

logger = logging.getLogger("mcpsync.engine")

#: No bounds given: every default of :class:`ConnectionLimits`.
DEFAULT_LIMITS: Final = ConnectionLimits()


class Connection:
    """A running JSON-RPC peer over one transport. ``limits``: its bounds and timeouts."""

    def __init__(
        self,
        transport: Transport,
        *,
        on_request: RequestHandler,
        events: ConnectionEvents = NO_EVENTS,
        send_middleware: Sequence[Middleware] = (),
        recv_middleware: Sequence[Middleware] = (),
        limits: ConnectionLimits = DEFAULT_LIMITS,
        name: str = "mcpsync",
        threads: ConnectionThreads = OWN_THREADS,
        transport_context: TransportContext | None = None,
        telemetry: Instrumentation | None = None,
    ) -> None:
        self.transport = transport
        #: What every inbound message's TransportContext starts from (``None``: a client's
        #: connection, whose middleware and handlers see none).
        self.transport_context = transport_context
        self.name = name
        self.limits = limits
        self._events = events
        pool, push, inline_key = threads.pool, threads.push, threads.inline_key
        self._executor = InboundExecutor(recv_middleware, send_middleware, name=name,
                                         telemetry=telemetry)
        #: Records our requests (a CLIENT span each, its context in ``params._meta``).
        self._telemetry = telemetry if telemetry is not None and \
            telemetry.config.enabled else None
        self._peer = transport_context if transport_context is not None else \
            peer_of(transport)
        self._started = time.monotonic()
        # A given pool is shared (an HTTP app's sessions): this connection neither sizes
        # nor shuts it down. ``push``: no reader thread, the owner calls :meth:`deliver`.
        self._owns_pool = pool is None
        self._pool = pool if pool is not None else WorkerPool(
            limits.max_handlers, name=f"{name}-handler", max_backlog=limits.max_backlog)
        self._push = push
        if self._owns_pool and telemetry is not None:
            telemetry.gauges.track_pool(self._pool)
        self._closing = Closing(name)
        self._writer = Writer(transport, name)
        self._notifications = Notifications(
            name, self._pool, push=push, max_count=limits.max_queued_notifications,
            max_bytes=limits.max_queued_notification_bytes)
        # The parts, each owning its state. The table of our calls is made here: the
        # outbound side fills and empties it, the reading side only asks it.
        pending = PendingTable()
        self._reading = Reading(
            transport, pending, name=name, push=push, inline=inline_key is not None,
            caller_reads=threads.caller_reads, max_displaced=limits.max_handlers,
            drain_timeout=limits.drain_timeout, closing=self._closing, take=self._take,
            end=self._shutdown)
        self._readers = self._reading.readers  # (the tests look at both)
        self._role = self._reading.role
        self._outbound = Outbound(
            pending, send=self._send, closing=self._closing, calls=self._writer.calls,
            notifications=self._notifications,
            # Only a connection that runs requests inline has a reader thread to hand over.
            readers=self._readers if inline_key is not None else None, reads=self._reading,
            name=name, request_timeout=limits.request_timeout)
        self._inflight = InflightRequests(
            self, on_request=on_request, executor=self._executor, pool=self._pool,
            readers=self._readers, inline_key=inline_key, outbound=self._outbound,
            send=self._send, refuse=self._refuse)

    @property
    def request_timeout(self) -> float:
        """Seconds a :meth:`request` given no ``timeout`` waits for its answer."""
        return self.limits.request_timeout

    @property
    def drain_timeout(self) -> float:
        """Seconds running handlers get to answer when the peer's input ends."""
        return self.limits.drain_timeout

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Connection:
        """Start the reader and notification threads (none in push mode). Returns self."""
        if self._push:
            return self
        self._notifications.start()
        self._reading.start()
        return self

    @property
    def closed(self) -> bool:
        """True once the connection has ended, for whatever reason."""
        return self._closing.closed

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the connection ends (peer EOF or :meth:`close`); False on timeout."""
        return self._closing.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """End the connection: fail pending calls, cancel handlers, join threads (bounded)."""
        self._shutdown("connection closed", drain=0.0)
        self._join(timeout)

    def _join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self._reading.join(deadline)
        self._notifications.join(max(0.0, deadline - time.monotonic()))
        if self._owns_pool:
            self._pool.shutdown(max(0.0, deadline - time.monotonic()))

    def _shutdown(self, reason: str, drain: float) -> None:
        if not self._closing.begin():
            return
        if self._events.closing is not None:
            # Before the drain: lets long-lived handlers (subscriptions) end gracefully.
            try:
                self._events.closing()
            except Exception:
                logger.exception("on_closing callback failed")
        # Outbound calls can never be answered now.
        self._outbound.close(reason)
        if drain > 0:
            # Let running handlers finish and write their answers (a piped-in script).
            self._inflight.drain(drain)
        self._inflight.cancel_all()
        self.transport.close()
        self._reading.close()
        self._notifications.close()
        self._closing.done()
        if self._telemetry is not None:  # mcp.{server,client}.session.duration
            self._telemetry.session_ended(time.monotonic() - self._started,
                                          transport=self._peer,
                                          protocol_version=self._executor.protocol_version)
        if self._events.closed is not None:
            try:
                self._events.closed()
            except Exception:
                logger.exception("on_closed callback failed")

    # -- sending -----------------------------------------------------------------------

    def _send(self, message: Message, related_request_id: RequestId | None = None,
              transport: TransportContext | None = None,
              deadline: Deadline | None = None) -> None:
        """Send through the send middleware, ``transport`` bound for it (else the one of
        the request this thread serves, else the connection's own). ``deadline``: the one
        the caller of a request waits with (for :class:`CallControl` transports)."""
        if not self._executor.has_send_middleware:
            self._writer.write(message, related_request_id, deadline)
            return
        written: list[Message] = []

        def terminal(final: Message) -> None:
            self._writer.write(final, related_request_id, deadline)
            written.append(final)

        if transport is None and current_transport() is None:
            transport = self._context_of(related_request_id)
        self._executor.send(message, transport, terminal)
        self._check_answered(message, written)

    def _check_answered(self, message: Message, written: list[Message]) -> None:
        """After the send middleware: when ``message`` answered an inbound request and
        nothing answering that request was written (the middleware dropped it, or gave
        it another id), the transport is told that no answer will come."""
        if not isinstance(message, (Response, ErrorResponse)) or message.id is None:
            return
        if not any(isinstance(final, (Response, ErrorResponse)) and final.id == message.id
                   for final in written):
            self._writer.unanswered(message.id)

    def _refuse(self, request_id: RequestId | None, error: dict[str, Any],
                transport: TransportContext | None) -> None:
        """Answer a request no handler will see (unreadable, a duplicate id, no thread
        free) through :meth:`InboundExecutor.reject`, the one path every transport's
        refusals take: the send middleware sees it, ``transport`` bound (else the
        connection's)."""
        if transport is None and current_transport() is None:
            transport = self.transport_context
        # (A refusal the send middleware drops is not reported unanswered: its id may be
        # a duplicate's, whose stream belongs to the request already running under it.)
        self._executor.reject(request_id, error, transport,
                              lambda final: self._writer.write(final, None))

    def _context_of(self, related_request_id: RequestId | None) -> TransportContext | None:
        """The context of the inbound request a message belongs to (sent from a thread of
        the handler's own, say), else the connection's."""
        if related_request_id is not None:
            context = self._inflight.context_of(related_request_id)
            if context is not None:
                return context
        return self.transport_context

    def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None:
        """Send a notification. Raises ``ConnectionClosedError`` once closed."""
        if self._closing.closed:
            raise self._closing.error(f"cannot send {method}")
        self._send(Notification(method, params), related_request_id)

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        parent: RequestId | None = None,
        related_request_id: RequestId | None = None,
        follows_previous: bool = False,
    ) -> dict[str, Any]:
        """Send a request and block for its result (at most ``timeout`` seconds).
        ``follows_previous``: it is another round of the request this thread sent last
        (MRTR), recorded as a child of it.

        Raises :class:`~mcpsync.errors.MCPError` for an error response,
        :class:`~mcpsync.errors.RequestTimeoutError` when the deadline passes (the peer is
        told to cancel), :class:`~mcpsync.errors.RequestCancelledError` when ``parent`` (the
        inbound request this call serves) is cancelled, and
        :class:`~mcpsync.errors.ConnectionClosedError` when the connection ends.
        ``KeyboardInterrupt`` while waiting cancels the request on the peer, then propagates.
        """
        telemetry = self._telemetry
        if telemetry is not None and telemetry.active:
            return self._recorded_request(telemetry, method, params, timeout=timeout,
                                          on_progress=on_progress, parent=parent,
                                          related_request_id=related_request_id,
                                          follows_previous=follows_previous)
        return self._outbound.request(method, params, timeout=timeout,
                                      on_progress=on_progress, parent=parent,
                                      related_request_id=related_request_id)

    @property
    def protocol_version(self) -> str | None:
        """The revision negotiated on this connection, once its owner says (the handshake
        era; telemetry attributes only)."""
        return self._executor.protocol_version

    @protocol_version.setter
    def protocol_version(self, version: str | None) -> None:
        self._executor.protocol_version = version

    def _recorded_request(self, telemetry: Instrumentation, method: str,
                          params: dict[str, Any] | None, *, timeout: float | None,
                          on_progress: ProgressCallback | None, parent: RequestId | None,
                          related_request_id: RequestId | None,
                          follows_previous: bool) -> dict[str, Any]:
        """:meth:`request` as an operation: a CLIENT span (child of this thread's current
        span: a handler's, for a server's reverse call) whose context the peer gets in
        ``params._meta``, and the call's duration."""
        params = dict(params) if params else {}
        request_id = self._outbound.new_id()  # taken first: the span names it
        operation = telemetry.outbound(
            method, params, request_id, transport=self._peer,
            protocol_version=self._executor.protocol_version,
            follows=_last_round.get() if follows_previous else None)
        if operation is not None and operation.span is not None:
            _last_round.set(operation.span.get_span_context())
        try:
            result = self._outbound.request(method, params, timeout=timeout,
                                            on_progress=on_progress, parent=parent,
                                            related_request_id=related_request_id,
                                            request_id=request_id)
        except BaseException as exc:
            if operation is not None:
                operation.raised(exc)
            raise
        if operation is not None:
            operation.succeeded(result)
        return result

    def use_id_prefix(self, prefix: str) -> None:
        """Name our requests ``"{prefix}-1"``, ``"{prefix}-2"``, ... instead of 1, 2, ...:
        when several processes serve one session (HTTP workers that relay between them),
        each gives its own prefix, so two of them never send the client the same id (the
        client keys its table of our requests by id) and an answer shows who asked.
        Only before the first request is sent."""
        self._outbound.use_id_prefix(prefix)

    def new_request_id(self) -> RequestId:
        """Allocate an id for :meth:`begin_request` (to register it somewhere first)."""
        return self._outbound.new_id()

    def begin_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        request_id: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
        parent: RequestId | None = None,
        related_request_id: RequestId | None = None,
        ordered: bool = False,
        deadline: Deadline | None = None,
    ) -> tuple[RequestId, Future[dict[str, Any]]]:
        """Send a request without waiting: returns its id and the Future of its result.

        For requests that stay open (``subscriptions/listen``); end one early with
        :meth:`cancel_request`. With ``ordered``, the Future is resolved on the
        notification thread, after every notification that arrived before the answer.
        ``deadline``: the moment the caller stops waiting for the Future (its exchange
        ends then, on transports that carry each call apart); none for one that stays open.
        """
        return self._outbound.begin(method, params, request_id=request_id,
                                    on_progress=on_progress, parent=parent,
                                    related_request_id=related_request_id, ordered=ordered,
                                    deadline=deadline)

    def cancel_request(self, request_id: RequestId, reason: str) -> bool:
        """Stop waiting for an outbound request and tell the peer (``notifications/cancelled``).

        Its Future fails with :class:`~mcpsync.errors.RequestCancelledError`. False when
        it was no longer pending (answered, or the connection ended).
        """
        return self._outbound.cancel(request_id, reason)

    # -- receiving ---------------------------------------------------------------------

    def deliver(self, item: Received | None,
                transport: TransportContext | None = None) -> Routed | None:
        """Push mode: route one message its owner received on a thread of its own (an HTTP
        request's), as the reader thread would; ``None`` is the end of input. ``transport``:
        what the owner knows of the peer that sent it (the HTTP request's headers), in
        place of the connection's own context. Returns what the receive middleware
        passed on (``None``: nothing), for an owner that relays it to another process."""
        if item is None:
            self._shutdown("peer closed the connection", drain=self.drain_timeout)
            return None
        passed: list[Routed] = []
        if not self._take(item, transport, passed.append):
            self._shutdown("connection closed", drain=0.0)
        return passed[0] if passed else None

    def deliver_relayed(self, message: Message, transport: TransportContext | None) -> None:
        """Push mode: route a message that another process's receive middleware passed
        on (relayed by an HTTP session), in its original context, not through ours."""
        context = transport if transport is not None else self.transport_context
        with bound(context):
            self._route(message, context)

    def _take(self, item: Received, transport: TransportContext | None = None,
              note: Callable[[Routed], None] | None = None) -> bool:
        """Route one received item, from a reading thread or :meth:`deliver`; ``False``
        when the connection turned out to be closed. ``note``: told what is routed."""
        base = transport if transport is not None else self.transport_context
        if isinstance(item, Invalid):
            self._reject(item, base)
            return True
        if isinstance(item, CallFailed):
            self._outbound.failed(item.request_id, item.error)
            return True
        # Each message gets its own context: an auth layer fills its slot for it alone.
        context = base.for_message(item) if base is not None else None
        def route(message: Message) -> None:
            if note is not None:
                note(Routed(message, context))
            self._route(message, context)

        try:
            self._executor.receive(item, context, route,
                                   lambda answer: self._send(answer, None, context))
        except ConnectionClosedError:
            return False
        except Exception:
            logger.exception("%s: failed to route %r", self.name, item)
        return True

    def _reject(self, item: Invalid, transport: TransportContext | None) -> None:
        logger.debug("%s: invalid message: %s", self.name, item.reason)
        if item.answer_to is not None:
            # An answer we could not read: a local failure.
            self._outbound.unreadable(item.answer_to, item.reason)
        if item.reply is not None:
            try:
                self._refuse(item.reply.id, item.reply.error, transport)
            except ConnectionClosedError:
                pass

    def _route(self, message: Message, transport: TransportContext | None) -> None:
        if isinstance(message, Request):
            self._inflight.accept(message, transport)
        elif isinstance(message, Notification):
            self._accept_notification(message)
        else:
            self._outbound.answered(message)

    def _accept_notification(self, message: Notification) -> None:
        method = message.method
        if method == "notifications/cancelled":
            self._inflight.cancel(cancelled_request_id(message.params))
            return
        if method == "notifications/progress":
            params = message.params or {}
            token = params.get("progressToken")
            if isinstance(token, bool) or not isinstance(token, (str, int)):
                logger.debug("%s: progress with an invalid token ignored", self.name)
                return
            callback = self._outbound.progress(token)
            if callback is not None:
                self._notifications.enqueue(lambda: callback(params), message)
            return
        arrival, handler = self._events.arrival, self._events.notification
        if arrival is not None and arrival(message):
            return
        if handler is not None:
            context = current_transport()  # the message's, bound by the receive path

            def job() -> None:
                with bound(context):
                    handler(message)

            self._notifications.enqueue(job, message)

    # -- introspection -------------------------------------------------------------------

    @property
    def inflight_count(self) -> int:
        """Inbound requests being handled now."""
        return self._inflight.count

    @property
    def pending_count(self) -> int:
        """Outbound requests awaiting an answer."""
        return len(self._outbound.pending)

    @property
    def queued_notifications(self) -> int:
        """Inbound notifications waiting for the notification thread."""
        return self._notifications.count

    @property
    def dropped_notifications(self) -> int:
        """Inbound notifications dropped because the queue was full, since the start."""
        return self._notifications.dropped


#: The span context of the request this thread sent last, for the rounds that follow it.
_last_round: contextvars.ContextVar[Any] = contextvars.ContextVar("mcpsync_last_round",
                                                                 default=None)
