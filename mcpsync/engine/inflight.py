"""The peer's requests a connection is answering: :class:`InflightRequests`.

Each inbound request is in the in-flight table from its arrival until its answer is
written (a duplicate id is refused). It runs on the bounded handler pool or, on a
connection given ``inline_key`` (a server session), inline on the reader thread once the
receive path has returned (:mod:`mcpsync.engine.inline`); a full pool answers "busy". A
``notifications/cancelled`` sets its ``cancelled`` event, and the calls it made to the
peer are cancelled with it, as they are once it has finished. At the connection's end the
running ones may finish and write their answers (the drain), then the rest are cancelled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from ..dispatch.inbound import InboundExecutor, TransportContext
from ..dispatch.outbound import OutboundChannel
from ..errors import INTERNAL_ERROR, INVALID_REQUEST, ConnectionClosedError
from ..protocol.bookkeeping import InflightTable
from ..protocol.jsonrpc import Message, Request, RequestId
from ..threads.pool import PoolFullError, WorkerPool
from .inline import Readers
from .outbound import Outbound
from .requests import InboundRequest

RequestHandler = Callable[[InboundRequest], dict[str, Any]]
#: Which inbound requests may run on the reader thread: a key naming what runs (the same
#: key, the same handler: ``("tools/call", "echo")``), or ``None`` for never.
InlineKey = Callable[[str, dict[str, Any]], Hashable | None]


class SendAnswer(Protocol):
    """The connection's send path, for an answer: ``transport`` is the request's."""

    def __call__(self, message: Message, related_request_id: RequestId | None = None,
                 transport: TransportContext | None = None) -> None: ...


class Refuse(Protocol):
    """The connection's refusal path (:meth:`InboundExecutor.reject` on its writer)."""

    def __call__(self, request_id: RequestId | None, error: dict[str, Any],
                 transport: TransportContext | None) -> None: ...


class InflightRequests:
    """The inbound requests of one connection, from arrival to answer. Thread-safe.

    ``channel``: what each request's handler talks back through (the connection).
    ``send``: the connection's send path for answers; ``refuse``: its refusal path, for a
    request refused here (a duplicate id, no thread free) before any handler saw it.
    ``readers``: the connection's reader threads (none in push mode); with ``inline_key``,
    requests may run on them."""

    def __init__(self, channel: OutboundChannel, *, on_request: RequestHandler,
                 executor: InboundExecutor, pool: WorkerPool, readers: Readers | None,
                 inline_key: InlineKey | None, outbound: Outbound,
                 send: SendAnswer, refuse: Refuse) -> None:
        self._channel = channel
        self._on_request = on_request
        self._executor = executor
        self._pool = pool
        self._readers = readers
        self._inline_key = inline_key if readers is not None else None
        self._outbound = outbound
        self._pending = outbound.pending  # asked per answer whether it has children
        self._send = send
        self._refuse = refuse
        self._lock = threading.Lock()
        self._table: InflightTable[InboundRequest] = InflightTable()
        self._answering = 0  # handlers between finishing and writing their answer
        self._empty = threading.Condition(self._lock)

    # -- arrival -------------------------------------------------------------------------

    def accept(self, message: Request, transport: TransportContext | None) -> None:
        """A request from the peer, routed on the receiving thread: run it (or refuse it)."""
        inbound = InboundRequest(self._channel, message.id, message.method,
                                 message.params or {}, transport)
        with self._lock:
            fresh = self._table.begin(message.id, inbound)
        if not fresh:
            self._refuse(message.id, {
                "code": INVALID_REQUEST,
                "message": f"Invalid request: id {message.id!r} is already in flight",
            }, transport)
            return
        if self._inline_key is not None and self._readers is not None:
            key = self._inline_key(message.method, inbound.params)
            if (key is not None and self._readers.is_reader()
                    and self._readers.policy.inline(key)):
                # Run by the read loop once the receive path (middleware, bound context)
                # has returned: a handler never runs inside receive middleware.
                self._readers.defer(key, lambda: self.handle(inbound))
                return
            if key is not None and self._readers.policy.is_slow(key):
                # Timed on the pool: quick runs in a row bring it back inline.
                policy = self._readers.policy
                slow_key = key

                def timed() -> None:
                    began = time.perf_counter()
                    self.handle(inbound)
                    policy.pooled(slow_key, time.perf_counter() - began)

                self._submit(message, timed, transport)
                return
        self._submit(message, lambda: self.handle(inbound), transport)

    def _submit(self, message: Request, job: Callable[[], None],
                transport: TransportContext | None) -> None:
        try:
            self._pool.submit(job)
        except (PoolFullError, RuntimeError) as exc:
            with self._lock:
                self._table.finish(message.id)
            text = f"Server busy: {exc}" if isinstance(exc, PoolFullError) else (
                "Connection is shutting down")
            self._refuse(message.id, {"code": INTERNAL_ERROR, "message": text}, transport)

    def handle(self, inbound: InboundRequest) -> None:
        """Run one request's handler and write its answer (on a pool or reader thread)."""
        if inbound.cancelled.is_set():
            self._deliver(inbound, None)
        else:
            self._executor.settle(inbound, lambda: self._on_request(inbound), self._deliver)

    def _deliver(self, inbound: InboundRequest, response: Message | None) -> None:
        """The end of :meth:`handle`: ``response`` written (``None``: nothing to write),
        the request's id freed, a drain waiting for it woken."""
        inbound.done = True
        with self._lock:
            # The id is free again (the peer may reuse it once answered), but the drain
            # at EOF still waits for this answer to be written: the transport must not
            # close under it (the last answers of a piped-in script were lost).
            self._table.finish(inbound.id)
            self._answering += 1
        try:
            if self._pending.has_children:
                self._outbound.cancel_children(inbound.id,
                                               "the request that made it has finished")
            if response is not None and not inbound.cancelled.is_set():
                try:
                    # An answer that cannot be encoded becomes an encodable error in
                    # Writer.write.
                    self._send(response, inbound.id, inbound.transport)
                except ConnectionClosedError:
                    pass
        finally:
            with self._lock:
                self._answering -= 1
                if not len(self._table) and not self._answering:
                    self._empty.notify_all()

    # -- while running -------------------------------------------------------------------

    def cancel(self, request_id: RequestId | None) -> None:
        """The peer cancelled ``request_id``: signal its handler, cancel the calls it made.
        Unknown or finished ids are ignored, as the spec says."""
        if request_id is None:
            return
        with self._lock:
            inbound = self._table.get(request_id)
        if inbound is None:
            return
        inbound.cancelled.set()
        self._outbound.cancel_children(request_id, "the request that made it was cancelled")

    def context_of(self, request_id: RequestId) -> TransportContext | None:
        """The transport context of inbound request ``request_id`` while it runs."""
        with self._lock:
            inbound = self._table.get(request_id)
        return inbound.transport if inbound is not None else None

    @property
    def count(self) -> int:
        """Inbound requests being handled now."""
        with self._lock:
            return len(self._table)

    # -- the connection's end ------------------------------------------------------------

    def drain(self, seconds: float) -> None:
        """Let running handlers finish and write their answers, for at most ``seconds``."""
        deadline = time.monotonic() + seconds
        with self._lock:
            while ((len(self._table) or self._answering)
                   and time.monotonic() < deadline):
                self._empty.wait(max(0.0, deadline - time.monotonic()))

    def cancel_all(self) -> None:
        """Cancel every request still in flight (their answers will not be written)."""
        with self._lock:
            leftovers = self._table.drain()
        for inbound in leftovers:
            inbound.cancelled.set()
