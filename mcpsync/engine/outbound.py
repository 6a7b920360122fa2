"""Our requests to the peer: :class:`Outbound`, and their table, :class:`PendingTable`.

Each request gets an id (:class:`IdAllocator`, or
:class:`PrefixedIds`), a :class:`Pending` entry whose
:class:`~concurrent.futures.Future` its caller waits on, always with a deadline, and ends
one way only: answered, failed here, timed out, cancelled (by its caller, or with the
inbound request it was made for), or failed by the connection's end. A call given up on
tells the peer (``notifications/cancelled``, except for ``initialize``) and, on a
transport with an exchange per call, ends that exchange at once.

Futures are resolved outside every lock: :class:`PendingTable`'s lock guards only dict
operations, and futures are resolved by the caller after ``pop``, outside the lock, so a
callback on a future can never run while the table is locked. A call with a progress
callback is resolved behind the progress callbacks already queued, so its caller has seen
every update before the call returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..errors import (
    ConnectionClosedError,
    MCPError,
    RequestCancelledError,
    RequestTimeoutError,
    TransportError,
)
from ..protocol.deadline import Deadline, DeadlineExceeded, budget_text
from ..protocol.jsonrpc import ErrorResponse, Message, Notification, Request, RequestId, Response
from ..protocol.methods import VIEWS
from ..transports.base import CallControl
from .inline import Readers
from .writer import Closing

logger = logging.getLogger("mcpsync.engine")

#: Methods whose timeout must not send ``notifications/cancelled`` (the spec forbids it).
_NOT_CANCELLABLE: Final = VIEWS.not_cancellable
#: How long the ``notifications/cancelled`` for a call given up on may wait to be written
#: (its turn, and room in a stdio pipe); past that it is not sent and the caller returns.
CANCEL_GRACE = 1.0

ProgressCallback = Callable[[dict[str, Any]], None]


# The Protocols are for the type checker only: defining one costs every server's start
# tens of µs, and nothing checks them at run time.
if TYPE_CHECKING:
    class Send(Protocol):
        """The connection's send path (send middleware, then the write)."""

        def __call__(self, message: Message, related_request_id: RequestId | None = None, *,
                     deadline: Deadline | None = None) -> None: ...

    class OwnReads(Protocol):
        """Where a caller may read its own answer (``engine/reading.py``)."""

        def read_own(self, request_id: RequestId, deadline: float) -> None: ...

    class Ordering(Protocol):
        """Where an answer waits behind the progress callbacks queued before it (the
        connection's notification queue, ``engine/reading.py``)."""

        def after(self, job: Callable[[], None]) -> None: ...

        def on_own_thread(self) -> bool: ...


class Pending:
    """One outbound request in flight."""

    __slots__ = ("future", "method", "on_progress", "ordered", "parent", "progress_token")

    def __init__(
        self,
        method: str,
        parent: RequestId | None = None,
        progress_token: Any = None,
        on_progress: Any = None,
    ) -> None:
        self.future: Future[dict[str, Any]] = Future()
        self.method = method
        self.parent = parent
        self.progress_token = progress_token
        self.on_progress = on_progress
        #: Resolve behind queued progress callbacks (False when the caller *is* the thread
        #: that runs them, which would otherwise wait on itself).
        self.ordered = on_progress is not None


class PendingTable:
    """Outbound requests by id, and by parent (the inbound request that made them). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[RequestId, Pending] = {}
        self._by_token: dict[Any, Pending] = {}
        self._children: dict[RequestId, set[RequestId]] = {}
        self._closed = False

    def add(self, request_id: RequestId, entry: Pending) -> bool:
        """Register ``entry``; False when the table is closed (the connection ended)."""
        with self._lock:
            if self._closed:
                return False
            self._by_id[request_id] = entry
            if entry.progress_token is not None:
                self._by_token[entry.progress_token] = entry
            if entry.parent is not None:
                self._children.setdefault(entry.parent, set()).add(request_id)
            return True

    def pop(self, request_id: RequestId) -> Pending | None:
        with self._lock:
            entry = self._by_id.pop(request_id, None)
            if entry is not None:
                self._unlink(request_id, entry)
            return entry

    def _unlink(self, request_id: RequestId, entry: Pending) -> None:
        if entry.progress_token is not None:
            self._by_token.pop(entry.progress_token, None)
        if entry.parent is not None:
            siblings = self._children.get(entry.parent)
            if siblings is not None:
                siblings.discard(request_id)
                if not siblings:
                    del self._children[entry.parent]

    def by_progress_token(self, token: Any) -> Pending | None:
        with self._lock:
            return self._by_token.get(token)

    def has(self, request_id: RequestId) -> bool:
        """Whether ``request_id`` is pending (read without the lock: one dict lookup)."""
        return request_id in self._by_id

    @property
    def empty(self) -> bool:
        """Whether nothing is pending (read without the lock: one length, exact under the
        GIL; the read role asks it under its own lock, see engine/reading.py)."""
        return not self._by_id

    @property
    def has_children(self) -> bool:
        """Whether any request was made on behalf of an inbound one (read without the
        lock: a hint that lets the common case skip :meth:`pop_children`)."""
        return bool(self._children)

    def pop_children(self, parent: RequestId) -> list[tuple[RequestId, Pending]]:
        """Remove and return the requests made on behalf of inbound request ``parent``."""
        with self._lock:
            ids = self._children.pop(parent, set())
            popped = []
            for request_id in ids:
                entry = self._by_id.pop(request_id, None)
                if entry is not None:
                    if entry.progress_token is not None:
                        self._by_token.pop(entry.progress_token, None)
                    popped.append((request_id, entry))
            return popped

    def close(self) -> list[Pending]:
        """Refuse new entries; remove and return every pending one."""
        with self._lock:
            self._closed = True
            entries = list(self._by_id.values())
            self._by_id.clear()
            self._by_token.clear()
            self._children.clear()
            return entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)


class Outbound:
    """Our requests in flight on one connection. Thread-safe.

    ``pending``: the table of calls awaiting an answer, filled and emptied here (the
    reading side only asks it whether anything is pending). ``readers``: the connection's
    reader threads when requests may run inline on them (a request running inline on one
    hands reading over before it waits); ``None`` otherwise. ``reads``: lets a caller
    read its own answer (stdio)."""

    def __init__(self, pending: PendingTable, *, send: Send, closing: Closing,
                 calls: CallControl | None, notifications: Ordering,
                 readers: Readers | None, reads: OwnReads, name: str,
                 request_timeout: float) -> None:
        self.pending = pending
        self._send = send
        self._closing = closing
        self._calls = calls
        self._notifications = notifications
        self._readers = readers
        self._reads = reads
        self._name = name
        self.request_timeout = request_timeout
        self._lock = threading.Lock()
        self._ids: IdAllocator | PrefixedIds = IdAllocator()

    # -- ids -----------------------------------------------------------------------------

    def use_id_prefix(self, prefix: str) -> None:
        """See :meth:`~mcpsync.engine.connection.Connection.use_id_prefix`."""
        with self._lock:
            self._ids = PrefixedIds(prefix)

    def new_id(self) -> RequestId:
        with self._lock:
            return self._ids.next()

    # -- sending -------------------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None, *, timeout: float | None,
                on_progress: ProgressCallback | None, parent: RequestId | None,
                related_request_id: RequestId | None,
                request_id: RequestId | None = None) -> dict[str, Any]:
        """See :meth:`~mcpsync.engine.connection.Connection.request`. ``request_id``: one
        taken from :meth:`new_id` beforehand (telemetry names it on the call's span)."""
        wait = self.request_timeout if timeout is None else timeout
        # One budget for the call: writing it (stdio: the pipe may be full), then its
        # answer; the transport's exchange ends by the moment this caller stops waiting.
        budget = Deadline(wait, method)
        if request_id is None:  # known before the send: a Ctrl-C during it can end the call
            request_id = self.new_id()
        try:
            request_id, future = self.begin(
                method, params, request_id=request_id, on_progress=on_progress, parent=parent,
                related_request_id=related_request_id,
                deadline=budget if self._calls is not None else None)
        except DeadlineExceeded:
            # Not a byte of it was written: the peer never saw it, and is not told.
            raise RequestTimeoutError(
                f"{method} timed out after {budget_text(wait)}: it could not be sent (the peer is "
                f"not reading what it is sent)") from None
        except KeyboardInterrupt:
            # Ctrl-C while it was being sent (the main thread may still be returning from
            # the send when the peer has it, and a transport thread carries it): ended as
            # one interrupted while waiting is, not left to run to its timeout. The peer
            # may be told of a request it never got, which it ignores (the spec's rule).
            self.pending.pop(request_id)
            self._tell_cancelled(request_id, method, "interrupted by the user")
            raise
        try:
            self._reads.read_own(request_id, budget.at)
            return future.result(budget.remaining())
        except FutureTimeout:
            if self.pending.pop(request_id) is None:
                # Answered just as the deadline passed: the result is on its way.
                return future.result(self.request_timeout)
            self._tell_cancelled(request_id, method, f"timed out after {budget_text(wait)}")
            raise RequestTimeoutError(f"{method} timed out after {budget_text(wait)}") from None
        except KeyboardInterrupt:
            if self.pending.pop(request_id) is not None:
                self._tell_cancelled(request_id, method, "interrupted by the user")
            raise

    def begin(self, method: str, params: dict[str, Any] | None, *,
              request_id: RequestId | None = None,
              on_progress: ProgressCallback | None = None, parent: RequestId | None = None,
              related_request_id: RequestId | None = None, ordered: bool = False,
              deadline: Deadline | None = None) -> tuple[RequestId, Future[dict[str, Any]]]:
        """See :meth:`~mcpsync.engine.connection.Connection.begin_request`."""
        if self._closing.closing:
            raise self._closing.error(f"cannot send {method}")
        if self._readers is not None:
            # A request running on the reader thread can not read its own answer.
            self._readers.yield_reading()
        if request_id is None:
            request_id = self.new_id()
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
        if self._notifications.on_own_thread():
            entry.ordered = False
        if not self.pending.add(request_id, entry):
            raise self._closing.error(f"cannot send {method}")
        try:
            self._send(Request(request_id, method, params), related_request_id,
                       deadline=deadline)
        except BaseException:
            self.pending.pop(request_id)
            raise
        return request_id, entry.future

    # -- ending a call -------------------------------------------------------------------

    def cancel(self, request_id: RequestId, reason: str) -> bool:
        """See :meth:`~mcpsync.engine.connection.Connection.cancel_request`."""
        entry = self.pending.pop(request_id)
        if entry is None:
            return False
        fail(entry, RequestCancelledError(f"{entry.method} cancelled: {reason}"))
        self._tell_cancelled(request_id, entry.method, reason)
        return True

    def cancel_children(self, parent: RequestId, reason: str) -> None:
        """Cancel the calls made on behalf of inbound request ``parent`` (it finished, or
        was cancelled)."""
        for child_id, entry in self.pending.pop_children(parent):
            fail(entry, RequestCancelledError(f"{entry.method} cancelled: {reason}"))
            self._tell_cancelled(child_id, entry.method, reason)

    def _tell_cancelled(self, request_id: RequestId, method: str, reason: str) -> None:
        if self._calls is not None:
            # Whatever the peer is told (nothing, for initialize): the thread carrying the
            # call is freed now, not when the peer answers or its read timeout runs out.
            self._calls.abandon(request_id)
        if method in _NOT_CANCELLABLE or self._closing.closing or self._closing.closed:
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
            logger.debug("%s: the cancellation of %s could not be sent in %g s", self._name,
                         request_id, CANCEL_GRACE)

    def close(self, reason: str) -> None:
        """The connection is ending: refuse new calls, fail every pending one."""
        for entry in self.pending.close():
            fail(entry, self._closing.error(f"{reason} while waiting for {entry.method}",
                                            suffix=False))

    # -- what the peer sent --------------------------------------------------------------

    def answered(self, message: Response | ErrorResponse) -> None:
        """The peer's answer to one of our requests."""
        if message.id is None:
            logger.warning("%s: peer reported an error about an unreadable message: %s",
                           self._name, getattr(message, "error", None))
            return
        entry = self.pending.pop(message.id)
        if entry is None:
            return  # late (timed out or cancelled): the spec says ignore it
        if entry.ordered:
            # Resolve behind the progress callbacks already queued, so the caller has seen
            # every progress update before its call returns.
            self._notifications.after(lambda: _resolve(entry, message))
        else:
            _resolve(entry, message)

    def failed(self, request_id: RequestId, error: BaseException) -> None:
        """The call failed on our side of the transport (a ``CallFailed``)."""
        entry = self.pending.pop(request_id)
        if entry is not None:  # else: timed out or cancelled meanwhile
            fail(entry, error)

    def unreadable(self, request_id: RequestId, reason: str) -> None:
        """The call's answer arrived but could not be read: a local failure."""
        entry = self.pending.pop(request_id)
        if entry is not None:
            fail(entry, TransportError(f"{entry.method}: the answer could not be read: "
                                       f"{reason}"))

    def progress(self, token: str | int) -> ProgressCallback | None:
        """The progress callback of the call that gave ``token``, if it is pending."""
        entry = self.pending.by_progress_token(token)
        return entry.on_progress if entry is not None else None


class IdAllocator:
    """Request ids 1, 2, 3...: never reused within a connection (a legacy-era rule). Not
    thread-safe: :class:`Outbound` takes its lock around :meth:`next`."""

    __slots__ = ("_next",)

    def __init__(self, start: int = 1) -> None:
        self._next = start

    def next(self) -> int:
        value = self._next
        self._next = value + 1
        return value


class PrefixedIds:
    """Request ids ``"{prefix}-{n}"``, never reused (see
    :meth:`~mcpsync.engine.connection.Connection.use_id_prefix`)."""

    __slots__ = ("_next", "prefix")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._next = 1

    def next(self) -> str:
        value = self._next
        self._next = value + 1
        return f"{self.prefix}-{value}"


def _resolve(entry: Pending, message: Response | ErrorResponse) -> None:
    if entry.future.done():
        return
    if isinstance(message, Response):
        entry.future.set_result(message.result)
    else:
        entry.future.set_exception(MCPError.from_wire(message.error))


def fail(entry: Pending, exc: BaseException) -> None:
    """Fail ``entry``'s Future, unless it is already done (outside every lock)."""
    if not entry.future.done():
        entry.future.set_exception(exc)
