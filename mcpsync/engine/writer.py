"""The send side of one connection: whether it may still send (:class:`Closing`), and
writing its messages to its transport, one at a time (:class:`Writer`).

:class:`Closing` is whether the connection is ending or has ended, and how. Every part of
a connection asks it, not only the send side: a call refused once the end has begun, a
pending call failed by it, a reader thread reporting why reading stopped; so it is kept
apart from :mod:`.connection`. The end begins once (:meth:`Closing.begin`, whoever gets
there first: ``close()``, the peer's EOF, a failed read) and is done when the transport is
closed and the connection's threads told to stop (:meth:`Closing.done`).

:class:`Writer`: writes are serialized by one lock held only around ``transport.send``: a
message is encoded before the lock is taken (the bytes are kept on the message, and the
transport reuses them). A write with a deadline (a call's, or a cancellation's grace) waits
for its turn only until then. A transport that takes turns itself, by the same rule
(:class:`~mcpsync.transports.base.OrderedWrites`: stdio's pipe writer), gets no second lock.
What goes through the send middleware first is the connection's
(:meth:`~mcpsync.engine.connection.Connection._send`); this is its last step.
"""

from __future__ import annotations

import logging
import math
import threading

from ..errors import ConnectionClosedError, ServerExitedError, UnencodableMessageError
from ..protocol.deadline import Deadline, DeadlineExceeded
from ..protocol.jsonrpc import (
    ErrorResponse,
    Message,
    RequestId,
    Response,
    encode,
    unencodable_answer,
)
from ..transports.base import CallControl, OrderedWrites, StreamControl, Transport

logger = logging.getLogger("mcpsync.engine")


class Closing:
    """A connection's end, as its parts see it. Thread-safe."""

    __slots__ = ("_closed", "_closing", "_exited", "_lock", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._closing = False
        self._closed = threading.Event()
        #: Set when the transport ended because the server process did: every call that
        #: fails afterwards carries its exit status and stderr tail, not just "closed".
        self._exited: ServerExitedError | None = None

    @property
    def closing(self) -> bool:
        """True once the end has begun (read without the lock: one flag)."""
        return self._closing

    @property
    def closed(self) -> bool:
        """True once the end is done."""
        return self._closed.is_set()

    def begin(self) -> bool:
        """Begin the end; True for the one caller that does, False for every later one."""
        with self._lock:
            if self._closing:
                return False
            self._closing = True
            return True

    def done(self) -> None:
        """The end is done: wake whoever waits for it."""
        self._closed.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the end is done; False on timeout."""
        return self._closed.wait(timeout)

    def error(self, what: str, *, suffix: bool = True) -> ConnectionClosedError:
        """A fresh error for a call that can not complete: ``what: connection closed``, or
        (when the server process ended) ``what: <how it ended>`` with its details."""
        exited = self._exited
        if exited is None:
            return ConnectionClosedError(f"{what}: connection closed" if suffix else what)
        return exited.retitled(f"{what}: {exited.reason}" if suffix else what)

    def receive_failed(self, exc: Exception) -> str:
        """Why reading ended, for whichever thread was reading: the server process's end
        (kept, so every failed call says how it ended), or the transport's error."""
        if isinstance(exc, ServerExitedError):
            self._exited = exc
            return exc.reason
        if isinstance(exc, ConnectionClosedError):
            # The transport ended and says why (a stdio peer that stopped reading).
            if not self._closing:
                logger.warning("%s: connection ended: %s", self._name, exc)
            return str(exc)
        if not self._closing:
            logger.warning("%s: receive failed: %s", self._name, exc)
        return f"receive failed: {exc}"


class Writer:
    """The write side of one transport. Thread-safe."""

    __slots__ = ("_calls", "_lock", "_name", "_streams", "_transport")

    def __init__(self, transport: Transport, name: str) -> None:
        self._transport = transport
        self._name = name
        #: ``None`` for a transport that orders its writes itself (stdio), else the write
        #: lock, held around each send.
        self._lock: threading.Lock | None = None if (
            isinstance(transport, OrderedWrites) and transport.orders_writes) else (
            threading.Lock())
        #: The transport's per-call hooks (HTTP): each request goes with the deadline its
        #: caller waits with, and a call given up on has its exchange ended at once.
        self._calls: CallControl | None = (transport if isinstance(transport, CallControl)
                                           else None)
        #: A transport that holds a stream open per inbound request (the handshake-era HTTP
        #: session), told when a request's answer will never come.
        self._streams: StreamControl | None = (
            transport if isinstance(transport, StreamControl) else None)

    @property
    def calls(self) -> CallControl | None:
        """The transport's per-call hooks, when it has them."""
        return self._calls

    def unanswered(self, request_id: RequestId) -> None:
        """The send middleware dropped the answer to inbound request ``request_id``: a
        transport holding its stream open lets go of it (others hold nothing for it)."""
        if self._streams is not None:
            self._streams.unanswered(request_id)

    def write(self, message: Message, related_request_id: RequestId | None,
              deadline: Deadline | None = None) -> None:
        """Write ``message``; with ``deadline``, give up (``DeadlineExceeded``, nothing
        written) when its turn has not come by then. A transport failure is a
        ``ConnectionClosedError``."""
        try:
            # Serialized before the lock (the bytes are kept on the message, and the
            # transport reuses them): writers hold it only for the write itself.
            encode(message)
        except UnencodableMessageError:
            pass  # the transport raises it again, under the lock, and it is answered below
        lock = self._lock
        if lock is None:
            pass  # the transport takes turns itself, each by its deadline
        elif deadline is None:
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
                        self._transport.send(message, related_request_id)
                except UnencodableMessageError as exc:
                    # The fault of this one message, never of the transport. An answer is
                    # owed all the same: an encodable error for the same id. A request or
                    # notification fails for its sender, who can fix it.
                    if not isinstance(message, (Response, ErrorResponse)):
                        raise
                    logger.error("%s: %s", self._name, exc)
                    self._transport.send(unencodable_answer(message, str(exc)),
                                         related_request_id)
            finally:
                if lock is not None:
                    lock.release()
        except (ConnectionClosedError, UnencodableMessageError, DeadlineExceeded):
            raise
        except (OSError, ValueError) as exc:
            raise ConnectionClosedError(f"transport failed: {exc}") from exc


def _lock_wait(deadline: Deadline) -> float:
    """``Lock.acquire``'s ``timeout`` for a wait that ends with ``deadline``."""
    left = deadline.remaining()
    return -1 if left == math.inf else left
