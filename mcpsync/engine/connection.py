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
  thread to read in its place;
* on a client connection over a byte stream (stdio), a caller whose answer nobody is
  reading reads it itself, routing whatever else it reads on the way as the reader thread
  would: the reader thread lends it the stream while calls follow one another
  (:mod:`mcpsync.engine.read_role`), which saves two thread wake-ups per call;
* inbound **notifications** and progress callbacks run in arrival order on one
  ``{name}-notify`` thread, behind a bounded queue: past ``max_queued_notifications``
  (count) or ``max_queued_notification_bytes`` (their encoded size), new ones are dropped
  with one warning per burst, so a slow callback can not make a chatty peer cost unbounded
  memory (answers queued behind them for ordering are never dropped);
* outbound **requests** wait on a :class:`~concurrent.futures.Future` in the
  :class:`~mcpsync.engine.pending.PendingTable`, always with a deadline;
* writes are serialized by one write lock held only around ``transport.send``;
* what happens to a message between the transport and the handler (receive middleware,
  the handler call, the one exception→wire mapping, send middleware, each with the
  message's :class:`~mcpsync.dispatch.transport.TransportContext` bound) is
  :class:`~mcpsync.dispatch.inbound.InboundExecutor`'s, shared with the HTTP app.

:class:`Connection` is thread-safe: any thread may call :meth:`request`, :meth:`notify` and
:meth:`close` at any time.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ..dispatch.inbound import InboundExecutor
from ..dispatch.inbound import Middleware as Middleware  # where server and client import it
from ..dispatch.inbound import compose as compose  # the engine's name for it, kept
from ..dispatch.transport import TransportContext, bound, current_transport
from ..errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ConnectionClosedError,
    MCPError,
    RequestCancelledError,
    RequestTimeoutError,
    ServerExitedError,
    TransportError,
    UnencodableMessageError,
)
from ..protocol.bookkeeping import IdAllocator, InflightTable, cancelled_request_id
from ..protocol.deadline import Deadline, DeadlineExceeded
from ..protocol.jsonrpc import (
    ErrorResponse,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    encode,
    unencodable_answer,
)
from ..threads.pool import PoolFullError, WorkerPool
from ..transports.base import CallControl, CallFailed, PolledTransport, Received, Transport
from .inline import Readers
from .notify_queue import Job, QueueBound, SerialJobs
from .pending import Pending, PendingTable
from .read_role import CALLER_SLICE, ReadRole
from .requests import InboundRequest

logger = logging.getLogger("mcpsync.engine")

DEFAULT_TIMEOUT = 60.0
#: Inbound notifications waiting for the notification thread, at most (count and bytes).
DEFAULT_MAX_QUEUED_NOTIFICATIONS = 1000
DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES = 64 * 1024 * 1024

#: Methods whose timeout must not send ``notifications/cancelled`` (the spec forbids it).
_NOT_CANCELLABLE = frozenset({"initialize"})
#: How long the ``notifications/cancelled`` for a call given up on may wait to be written
#: (its turn, and room in a stdio pipe); past that it is not sent and the caller returns.
CANCEL_GRACE = 1.0


RequestHandler = Callable[[InboundRequest], dict[str, Any]]
#: Which inbound requests may run on the reader thread: a key naming what runs (the same
#: key, the same handler: ``("tools/call", "echo")``), or ``None`` for never.
InlineKey = Callable[[str, dict[str, Any]], Hashable | None]
NotificationHandler = Callable[[Notification], None]
ProgressCallback = Callable[[dict[str, Any]], None]


class Connection:
    """A running JSON-RPC peer over one transport."""

    def __init__(
        self,
        transport: Transport,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler | None = None,
        send_middleware: Sequence[Middleware] = (),
        recv_middleware: Sequence[Middleware] = (),
        max_handlers: int = 64,
        max_backlog: int = 4096,
        default_timeout: float = DEFAULT_TIMEOUT,
        drain_timeout: float = 0.0,
        name: str = "mcpsync",
        on_closed: Callable[[], None] | None = None,
        on_closing: Callable[[], None] | None = None,
        pool: WorkerPool | None = None,
        push: bool = False,
        max_queued_notifications: int = DEFAULT_MAX_QUEUED_NOTIFICATIONS,
        max_queued_notification_bytes: int = DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
        transport_context: TransportContext | None = None,
        on_arrival: Callable[[Notification], bool] | None = None,
        inline_key: InlineKey | None = None,
        caller_reads: bool = False,
    ) -> None:
        self.transport = transport
        #: The transport's per-call hooks (HTTP): each request goes with the deadline its
        #: caller waits with, and a call given up on has its exchange ended at once.
        self._calls: CallControl | None = (transport if isinstance(transport, CallControl)
                                           else None)
        #: What every inbound message's TransportContext starts from (``None``: a client's
        #: connection, whose middleware and handlers see none).
        self.transport_context = transport_context
        self.name = name
        self.default_timeout = default_timeout
        self.drain_timeout = drain_timeout
        self._on_request = on_request
        self._on_notification = on_notification
        #: Protocol bookkeeping that must take effect in message order (a session's
        #: lifecycle): called on the receiving thread before a notification is queued;
        #: True means it was consumed. Never user code: it would stall the reader.
        self._on_arrival = on_arrival
        self._on_closed = on_closed
        self._on_closing = on_closing
        self._executor = InboundExecutor(recv_middleware, send_middleware, name=name)
        # A given pool is shared (an HTTP app's sessions): this connection neither sizes
        # nor shuts it down. ``push``: no reader thread, the owner calls :meth:`deliver`.
        self._owns_pool = pool is None
        self._pool = pool if pool is not None else WorkerPool(
            max_handlers, name=f"{name}-handler", max_backlog=max_backlog)
        self._push = push
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._inflight_empty = threading.Condition(self._lock)
        self._answering = 0  # handlers between finishing and writing their answer
        self._ids: IdAllocator | PrefixedIds = IdAllocator()
        self._inflight: InflightTable[InboundRequest] = InflightTable()
        self._pending = PendingTable()
        self._queued = QueueBound(max_queued_notifications, max_queued_notification_bytes,
                                   name)
        #: Jobs for the notification thread (or, in push mode, the shared pool), each with
        #: the bytes it holds (-1: an answer queued for ordering, which is not counted and
        #: never dropped).
        self._notify_queue: queue.SimpleQueue[Job | None] | SerialJobs = (
            SerialJobs(self._pool, name, self._queued.release) if push
            else queue.SimpleQueue())
        #: Reader threads (none in push mode): one reads at a time, see engine/inline.py.
        self._readers: Readers | None = None if push else Readers(
            name, self._read_loop, max_displaced=max_handlers)
        self._inline_key = inline_key if not push else None
        #: ``caller_reads``: a caller may read its own answer (a client over stdio; never
        #: with inline runs, whose reader hand-over is engine/inline.py's).
        self._role: ReadRole | None = None
        self._polled: PolledTransport | None = None
        if (caller_reads and not push and self._inline_key is None
                and isinstance(transport, PolledTransport) and transport.pollable):
            self._role = ReadRole()
            self._polled = transport
        #: A request the reader routed to run inline once the receive path has returned
        #: (only the reading thread sets and takes it).
        self._deferred: tuple[InboundRequest, Hashable] | None = None
        self._notifier: threading.Thread | None = None
        self._closing = False
        self._closed = threading.Event()
        #: Set when the transport ended because the server process did: every call that
        #: fails afterwards carries its exit status and stderr tail, not just "closed".
        self._exited: ServerExitedError | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Connection:
        """Start the reader and notification threads (none in push mode). Returns self."""
        if self._push:
            return self
        self._notifier = threading.Thread(
            target=self._notify_loop, name=f"{self.name}-notify", daemon=True
        )
        self._notifier.start()
        assert self._readers is not None
        self._readers.start()
        return self

    @property
    def closed(self) -> bool:
        """True once the connection has ended, for whatever reason."""
        return self._closed.is_set()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the connection ends (peer EOF or :meth:`close`); False on timeout."""
        return self._closed.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """End the connection: fail pending calls, cancel handlers, join threads (bounded)."""
        self._shutdown("connection closed", drain=0.0)
        self._join(timeout)

    def _join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if self._readers is not None:
            self._readers.join(deadline)
        notifier = self._notifier
        if notifier is not None and notifier is not threading.current_thread():
            notifier.join(max(0.0, deadline - time.monotonic()))
        if self._owns_pool:
            self._pool.shutdown(max(0.0, deadline - time.monotonic()))

    def _shutdown(self, reason: str, drain: float) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if self._on_closing is not None:
            # Before the drain: lets long-lived handlers (subscriptions) end gracefully.
            try:
                self._on_closing()
            except Exception:
                logger.exception("on_closing callback failed")
        # Outbound calls can never be answered now.
        for entry in self._pending.close():
            _fail(entry, self._closed_error(f"{reason} while waiting for {entry.method}",
                                            suffix=False))
        if drain > 0:
            # Let running handlers finish and write their answers (a piped-in script).
            deadline = time.monotonic() + drain
            with self._lock:
                while ((len(self._inflight) or self._answering)
                       and time.monotonic() < deadline):
                    self._inflight_empty.wait(max(0.0, deadline - time.monotonic()))
        with self._lock:
            leftovers = self._inflight.drain()
        for inbound in leftovers:
            inbound.cancelled.set()
        self.transport.close()
        if self._role is not None:
            self._role.close()
        if self._readers is not None:
            self._readers.close()
        self._notify_queue.put(None)
        self._closed.set()
        if self._on_closed is not None:
            try:
                self._on_closed()
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
            self._write(message, related_request_id, deadline)
            return

        def terminal(final: Message) -> None:
            self._write(final, related_request_id, deadline)

        if transport is None and current_transport() is None:
            transport = self._context_of(related_request_id)
        self._executor.send(message, transport, terminal)

    def _context_of(self, related_request_id: RequestId | None) -> TransportContext | None:
        """The context of the inbound request a message belongs to (sent from a thread of
        the handler's own, say), else the connection's."""
        if related_request_id is not None:
            with self._lock:
                inbound = self._inflight.get(related_request_id)
            if inbound is not None and inbound.transport is not None:
                return inbound.transport
        return self.transport_context

    def _closed_error(self, what: str, *, suffix: bool = True) -> ConnectionClosedError:
        """A fresh error for a call that can not complete: ``what: connection closed``, or
        (when the server process ended) ``what: <how it ended>`` with its details."""
        exited = self._exited
        if exited is None:
            return ConnectionClosedError(f"{what}: connection closed" if suffix else what)
        return exited.retitled(f"{what}: {exited.reason}" if suffix else what)

    def _write(self, message: Message, related_request_id: RequestId | None,
               deadline: Deadline | None = None) -> None:
        try:
            # Serialized before the lock (the bytes are kept on the message, and the
            # transport reuses them): writers hold it only for the write itself.
            encode(message)
        except UnencodableMessageError:
            pass  # the transport raises it again, under the lock, and it is answered below
        lock = self._write_lock
        if deadline is None:
            lock.acquire()
        elif not lock.acquire(False) and not lock.acquire(timeout=_lock_wait(deadline)):
            # Its turn never came (another write holds the stream): nothing was written.
            raise deadline.exceeded()
        try:
            try:
                try:
                    if deadline is not None and self._calls is not None:
                        self._calls.send_call(message, deadline, related_request_id)
                    else:
                        self.transport.send(message, related_request_id)
                except UnencodableMessageError as exc:
                    # The fault of this one message, never of the transport. An answer is
                    # owed all the same: an encodable error for the same id. A request or
                    # notification fails for its sender, who can fix it.
                    if not isinstance(message, (Response, ErrorResponse)):
                        raise
                    logger.error("%s: %s", self.name, exc)
                    self.transport.send(unencodable_answer(message, str(exc)),
                                        related_request_id)
            finally:
                lock.release()
        except (ConnectionClosedError, UnencodableMessageError, DeadlineExceeded):
            raise
        except (OSError, ValueError) as exc:
            raise ConnectionClosedError(f"transport failed: {exc}") from exc

    def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None:
        """Send a notification. Raises ``ConnectionClosedError`` once closed."""
        if self._closed.is_set():
            raise self._closed_error(f"cannot send {method}")
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
    ) -> dict[str, Any]:
        """Send a request and block for its result (at most ``timeout`` seconds).

        Raises :class:`~mcpsync.errors.MCPError` for an error response,
        :class:`~mcpsync.errors.RequestTimeoutError` when the deadline passes (the peer is
        told to cancel), :class:`~mcpsync.errors.RequestCancelledError` when ``parent`` (the
        inbound request this call serves) is cancelled, and
        :class:`~mcpsync.errors.ConnectionClosedError` when the connection ends.
        ``KeyboardInterrupt`` while waiting cancels the request on the peer, then propagates.
        """
        wait = self.default_timeout if timeout is None else timeout
        # One budget for the call: writing it (stdio: the pipe may be full), then its
        # answer; the transport's exchange ends by the moment this caller stops waiting.
        budget = Deadline(wait, method)
        try:
            request_id, future = self.begin_request(
                method, params, on_progress=on_progress, parent=parent,
                related_request_id=related_request_id,
                deadline=budget if self._calls is not None else None)
        except DeadlineExceeded:
            # Not a byte of it was written: the peer never saw it, and is not told.
            raise RequestTimeoutError(
                f"{method} timed out after {wait} s: it could not be sent (the peer is "
                f"not reading what it is sent)") from None
        try:
            role = self._role
            if role is not None:
                try:
                    if role.take():
                        self._read_own(request_id, budget.at)
                finally:
                    # Also when a KeyboardInterrupt landed just after take() succeeded
                    # (the stream stayed held by nobody reading: every later call hung).
                    role.give_back(self._idle)
            return future.result(budget.remaining())
        except FutureTimeout:
            if self._pending.pop(request_id) is None:
                # Answered just as the deadline passed: the result is on its way.
                return future.result(self.default_timeout)
            self._cancel_outbound(request_id, method, f"timed out after {wait} s")
            raise RequestTimeoutError(f"{method} timed out after {wait} s") from None
        except KeyboardInterrupt:
            if self._pending.pop(request_id) is not None:
                self._cancel_outbound(request_id, method, "interrupted by the user")
            raise

    def use_id_prefix(self, prefix: str) -> None:
        """Name our requests ``"{prefix}-1"``, ``"{prefix}-2"``, ... instead of 1, 2, ...:
        when several processes serve one session (HTTP workers that relay between them),
        each gives its own prefix, so two of them never send the client the same id (the
        client keys its table of our requests by id) and an answer shows who asked.
        Only before the first request is sent."""
        with self._lock:
            self._ids = PrefixedIds(prefix)

    def new_request_id(self) -> RequestId:
        """Allocate an id for :meth:`begin_request` (to register it somewhere first)."""
        with self._lock:
            return self._ids.next()

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
        if self._closing:
            raise self._closed_error(f"cannot send {method}")
        if self._readers is not None:
            # A request running on the reader thread can not read its own answer.
            self._readers.yield_reading()
        if request_id is None:
            request_id = self.new_request_id()
        token = None
        if on_progress is not None:
            token = request_id
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = token
            params["_meta"] = meta
        entry = Pending(method, parent, token, on_progress)
        if ordered:
            entry.ordered = True
        if threading.current_thread() in (self._notifier, getattr(
                self._notify_queue, "thread", None)):
            entry.ordered = False
        if not self._pending.add(request_id, entry):
            raise self._closed_error(f"cannot send {method}")
        try:
            self._send(Request(request_id, method, params), related_request_id,
                       deadline=deadline)
        except BaseException:
            self._pending.pop(request_id)
            raise
        return request_id, entry.future

    def cancel_request(self, request_id: RequestId, reason: str) -> bool:
        """Stop waiting for an outbound request and tell the peer (``notifications/cancelled``).

        Its Future fails with :class:`~mcpsync.errors.RequestCancelledError`. False when
        it was no longer pending (answered, or the connection ended).
        """
        entry = self._pending.pop(request_id)
        if entry is None:
            return False
        _fail(entry, RequestCancelledError(f"{entry.method} cancelled: {reason}"))
        self._cancel_outbound(request_id, entry.method, reason)
        return True

    def _cancel_outbound(self, request_id: RequestId, method: str, reason: str) -> None:
        if self._calls is not None:
            # Whatever the peer is told (nothing, for initialize): the thread carrying the
            # call is freed now, not when the peer answers or its read timeout runs out.
            self._calls.abandon(request_id)
        if method in _NOT_CANCELLABLE or self._closing or self._closed.is_set():
            return
        # Within a grace, not the caller's own (which has passed, or was never there): a
        # peer that can not take it by then is not reading, and the caller returns.
        cancel = Notification("notifications/cancelled",
                              {"requestId": request_id, "reason": reason})
        try:
            self._send(cancel, deadline=Deadline(CANCEL_GRACE, "notifications/cancelled"))
        except ConnectionClosedError:
            pass
        except DeadlineExceeded:
            logger.debug("%s: the cancellation of %s could not be sent in %g s", self.name,
                         request_id, CANCEL_GRACE)

    # -- receiving ---------------------------------------------------------------------

    def _read_loop(self) -> None:
        reason = "peer closed the connection"
        readers = self._readers
        assert readers is not None
        role = self._role
        displaced = False
        try:
            while True:
                try:
                    item = self.transport.receive()
                except Exception as exc:
                    reason = self._receive_failed(exc)
                    break
                if item is None:
                    break
                routed = self._take(item)
                deferred = self._deferred
                if deferred is not None:
                    self._deferred = None
                    inbound, key = deferred
                    if not readers.run_inline(key, self._handle, inbound):
                        displaced = True  # another thread reads (and shuts down) now
                        return
                if not routed:
                    break
                if role is not None and self._idle() and not role.lend(self._idle):
                    break  # closed meanwhile (by a caller that was reading)
        finally:
            if not displaced:
                self._shutdown(reason, drain=self.drain_timeout)

    def _receive_failed(self, exc: Exception) -> str:
        """Why reading ended, for whichever thread was reading: the server process's end
        (kept, so every failed call says how it ended), or the transport's error."""
        if isinstance(exc, ServerExitedError):
            self._exited = exc
            return exc.reason
        if isinstance(exc, ConnectionClosedError):
            # The transport ended and says why (a stdio peer that stopped reading).
            if not self._closing:
                logger.warning("%s: connection ended: %s", self.name, exc)
            return str(exc)
        if not self._closing:
            logger.warning("%s: receive failed: %s", self.name, exc)
        return f"receive failed: {exc}"

    def _idle(self) -> bool:
        """Nothing to read for anyone: no call pending, no message read and not taken."""
        polled = self._polled
        return self._pending.empty and not (polled is not None and polled.buffered)

    def _read_own(self, request_id: RequestId, deadline: float) -> None:
        """A caller holding the read role: read and route until ``request_id`` is no longer
        pending (answered, cancelled, failed) or ``deadline`` (``time.monotonic()``)."""
        polled = self._polled
        assert polled is not None
        pending = self._pending
        reason, drain = "", self.drain_timeout
        while pending.has(request_id):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                item = polled.receive_within(min(left, CALLER_SLICE))
            except TimeoutError:
                continue
            except Exception as exc:
                reason = self._receive_failed(exc)
                break
            if item is None:
                reason = "peer closed the connection"
                break
            if not self._take(item):
                reason, drain = "connection closed", 0.0
                break
        else:
            return
        self._shutdown(reason, drain=drain)

    def deliver(self, item: Received | None, transport: TransportContext | None = None) -> None:
        """Push mode: route one message its owner received on a thread of its own (an HTTP
        request's), as the reader thread would; ``None`` is the end of input. ``transport``:
        what the owner knows of the peer that sent it (the HTTP request's headers), in
        place of the connection's own context."""
        if item is None:
            self._shutdown("peer closed the connection", drain=self.drain_timeout)
            return
        if not self._take(item, transport):
            self._shutdown("connection closed", drain=0.0)

    def _take(self, item: Received, transport: TransportContext | None = None) -> bool:
        """Route one received item, from the reader thread or :meth:`deliver`; ``False``
        when the connection turned out to be closed."""
        base = transport if transport is not None else self.transport_context
        if isinstance(item, Invalid):
            self._reject(item, base)
            return True
        if isinstance(item, CallFailed):
            entry = self._pending.pop(item.request_id)
            if entry is not None:  # else: timed out or cancelled meanwhile
                _fail(entry, item.error)
            return True
        # Each message gets its own context: an auth layer fills its slot for it alone.
        context = base.for_message(item) if base is not None else None
        try:
            self._executor.receive(item, context, lambda message: self._route(message, context),
                                   lambda answer: self._send(answer, None, context))
        except ConnectionClosedError:
            return False
        except Exception:
            logger.exception("%s: failed to route %r", self.name, item)
        return True

    def _reject(self, item: Invalid, transport: TransportContext | None) -> None:
        logger.debug("%s: invalid message: %s", self.name, item.reason)
        if item.answer_to is not None:
            entry = self._pending.pop(item.answer_to)
            if entry is not None:  # an answer we could not read: a local failure
                _fail(entry, TransportError(f"{entry.method}: the answer could not be read: "
                                            f"{item.reason}"))
        if item.reply is not None:
            try:
                self._send(item.reply, None, transport)
            except ConnectionClosedError:
                pass

    def _route(self, message: Message, transport: TransportContext | None) -> None:
        if isinstance(message, Request):
            self._accept_request(message, transport)
        elif isinstance(message, Notification):
            self._accept_notification(message)
        else:
            self._accept_response(message)

    def _accept_response(self, message: Response | ErrorResponse) -> None:
        if message.id is None:
            logger.warning("%s: peer reported an error about an unreadable message: %s",
                           self.name, getattr(message, "error", None))
            return
        entry = self._pending.pop(message.id)
        if entry is None:
            return  # late (timed out or cancelled): the spec says ignore it
        if entry.ordered:
            # Resolve behind the progress callbacks already queued, so the caller has seen
            # every progress update before its call returns.
            self._notify_queue.put((lambda: _resolve(entry, message), -1))
        else:
            _resolve(entry, message)

    def _accept_request(self, message: Request, transport: TransportContext | None) -> None:
        inbound = InboundRequest(self, message.id, message.method, message.params or {},
                                 transport)
        with self._lock:
            fresh = self._inflight.begin(message.id, inbound)
        if not fresh:
            self._send(ErrorResponse(message.id, {
                "code": INVALID_REQUEST,
                "message": f"Invalid request: id {message.id!r} is already in flight",
            }), None, transport)
            return
        if self._inline_key is not None and self._readers is not None:
            key = self._inline_key(message.method, inbound.params)
            if (key is not None and self._readers.is_reader()
                    and self._readers.policy.inline(key)):
                # Run by the read loop once the receive path (middleware, bound context)
                # has returned: a handler never runs inside receive middleware.
                self._deferred = (inbound, key)
                return
            if key is not None and self._readers.policy.is_slow(key):
                # Timed on the pool: quick runs in a row bring it back inline.
                policy = self._readers.policy
                slow_key = key

                def timed() -> None:
                    began = time.perf_counter()
                    self._handle(inbound)
                    policy.pooled(slow_key, time.perf_counter() - began)

                self._submit(message, timed, transport)
                return
        self._submit(message, lambda: self._handle(inbound), transport)

    def _submit(self, message: Request, job: Callable[[], None],
                transport: TransportContext | None) -> None:
        try:
            self._pool.submit(job)
        except (PoolFullError, RuntimeError) as exc:
            with self._lock:
                self._inflight.finish(message.id)
            text = f"Server busy: {exc}" if isinstance(exc, PoolFullError) else (
                "Connection is shutting down")
            self._send(ErrorResponse(message.id, {"code": INTERNAL_ERROR, "message": text}),
                       None, transport)

    def _handle(self, inbound: InboundRequest) -> None:
        response: Message | None = None
        if not inbound.cancelled.is_set():
            response = self._executor.answer(inbound, lambda: self._on_request(inbound))
        inbound.done = True
        with self._lock:
            # The id is free again (the peer may reuse it once answered), but the drain
            # at EOF still waits for this answer to be written: the transport must not
            # close under it (the last answers of a piped-in script were lost).
            self._inflight.finish(inbound.id)
            self._answering += 1
        try:
            if self._pending.has_children:
                self._cancel_children(inbound.id, "the request that made it has finished")
            if response is not None and not inbound.cancelled.is_set():
                try:
                    # An answer that cannot be encoded becomes an encodable error in _write.
                    self._send(response, inbound.id, inbound.transport)
                except ConnectionClosedError:
                    pass
        finally:
            with self._lock:
                self._answering -= 1
                if not len(self._inflight) and not self._answering:
                    self._inflight_empty.notify_all()

    def _accept_notification(self, message: Notification) -> None:
        method = message.method
        if method == "notifications/cancelled":
            self._cancel_inbound(cancelled_request_id(message.params))
            return
        if method == "notifications/progress":
            params = message.params or {}
            token = params.get("progressToken")
            if isinstance(token, bool) or not isinstance(token, (str, int)):
                logger.debug("%s: progress with an invalid token ignored", self.name)
                return
            entry = self._pending.by_progress_token(token)
            if entry is not None and entry.on_progress is not None:
                callback = entry.on_progress
                self._enqueue(lambda: callback(params), message)
            return
        if self._on_arrival is not None and self._on_arrival(message):
            return
        if self._on_notification is not None:
            handler = self._on_notification
            context = current_transport()  # the message's, bound by the receive path

            def job() -> None:
                with bound(context):
                    handler(message)

            self._enqueue(job, message)

    def _enqueue(self, job: Callable[[], None], message: Notification) -> None:
        try:
            size = len(encode(message))
        except UnencodableMessageError:
            # It arrived as JSON, so it has a size; a lone surrogate only stops *us* from
            # writing it back out. Its repr is as long, near enough, for the bound.
            size = len(message.method) + len(repr(message.params))
        if self._queued.admit(size):
            self._notify_queue.put((job, size))

    def _cancel_inbound(self, request_id: RequestId | None) -> None:
        if request_id is None:
            return
        with self._lock:
            inbound = self._inflight.get(request_id)
        if inbound is None:
            return  # unknown or finished: ignore, as the spec says
        inbound.cancelled.set()
        self._cancel_children(request_id, "the request that made it was cancelled")

    def _cancel_children(self, parent: RequestId, reason: str) -> None:
        for child_id, entry in self._pending.pop_children(parent):
            _fail(entry, RequestCancelledError(f"{entry.method} cancelled: {reason}"))
            self._cancel_outbound(child_id, entry.method, reason)

    def _notify_loop(self) -> None:
        jobs = self._notify_queue
        assert isinstance(jobs, queue.SimpleQueue)  # the thread exists only outside push mode
        while True:
            item = jobs.get()
            if item is None:
                return
            job, size = item
            if size >= 0:
                self._queued.release(size)
            try:
                job()
            except Exception:
                logger.exception("%s: notification callback failed", self.name)

    # -- introspection -------------------------------------------------------------------

    @property
    def inflight_count(self) -> int:
        """Inbound requests being handled now."""
        with self._lock:
            return len(self._inflight)

    @property
    def pending_count(self) -> int:
        """Outbound requests awaiting an answer."""
        return len(self._pending)

    @property
    def queued_notifications(self) -> int:
        """Inbound notifications waiting for the notification thread."""
        return self._queued.count

    @property
    def dropped_notifications(self) -> int:
        """Inbound notifications dropped because the queue was full, since the start."""
        return self._queued.dropped


class PrefixedIds:
    """Request ids ``"{prefix}-{n}"``, never reused (see :meth:`Connection.use_id_prefix`)."""

    __slots__ = ("_next", "prefix")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._next = 1

    def next(self) -> str:
        value = self._next
        self._next = value + 1
        return f"{self.prefix}-{value}"


def _lock_wait(deadline: Deadline) -> float:
    """``Lock.acquire``'s ``timeout`` for a wait that ends with ``deadline``."""
    left = deadline.remaining()
    return -1 if left == math.inf else left


def _resolve(entry: Pending, message: Response | ErrorResponse) -> None:
    if entry.future.done():
        return
    if isinstance(message, Response):
        entry.future.set_result(message.result)
    else:
        entry.future.set_exception(MCPError.from_wire(message.error))


def _fail(entry: Pending, exc: BaseException) -> None:
    if not entry.future.done():
        entry.future.set_exception(exc)
