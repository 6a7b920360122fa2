"""One HTTP response in the making: messages handed from handler threads to the WSGI thread.

A :class:`ResponseStream` collects the messages that belong to one response (the
notifications and server requests related to one client request, then its response; or
everything a standalone ``GET`` stream carries). Producers :meth:`~ResponseStream.put`
from any thread; the one WSGI thread that serves the response :meth:`~ResponseStream.take`.
A consumer can go away and another attach later (a resumed handshake-era stream): the
stream itself lives until its final message, or until it is ended.

A stream has at most one consumer. A resume may arrive while the server still holds the
connection the client gave up (a half-open TCP connection, a proxy that has not noticed,
a client whose read timed out): the newcomer *takes over*. :meth:`ResponseStream.attach`
returns a consumer token; the superseded consumer's :meth:`~ResponseStream.take` reports
the stream as over at once and its :meth:`~ResponseStream.detach` changes nothing, so it
can neither steal the newcomer's messages nor tear down what the newcomer holds.

With a relay between workers (:mod:`mcpsync.http.relay`) a stream may *follow* a key of
the event store instead of being fed by this process's producers: :meth:`follow` gives it
a ``refill`` that the consumer runs on each :meth:`take` (so at every keep-alive tick) and
whenever :meth:`poke` says that new events were stored. The refill runs on the consumer's
thread, never on the bus's.

A stream also carries its consumer's store :class:`~mcpsync.protocol.budget.Budget` (the
request's, taken at :meth:`~ResponseStream.attach`): a producer that stores the stream's
events while that request waits for them spends the same budget (``budget.lent()``), so a
request waiting on an answer whose event write hangs on Redis still ends within its one
budget. Once the request has answered (an SSE body streams on after it), the budget is
closed and producers bound each write by the store's own per-call budget.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from ..errors import UnencodableMessageError
from ..protocol import jsonrpc
from ..protocol.budget import Budget, current_budget
from ..protocol.decoding import parse_decimal
from ..protocol.jsonrpc import ErrorResponse, Message, Notification, Response

logger = logging.getLogger("mcpsync.http")

#: Bytes (encoded) of the messages one stream holds for its consumer, at most, the final
#: answer not counted; see :meth:`ResponseStream.put` for what happens past it.
MAX_QUEUED_BYTES: Final = 4 * 1024 * 1024
#: Notifications a full stream drops first: the spec makes each advisory (progress MAY be
#: sent, a log message is best effort), and a newer one says more than an older.
DROPPABLE: Final = frozenset({"notifications/progress", "notifications/message"})


Item = tuple[str | None, Message | None]  # (event id, message); None message: priming event


class ResponseStream:
    """Thread-safe. ``key`` names the stream in event ids (``None``: not resumable)."""

    # What a stream starts with and most streams never change: class defaults, so that
    # making one (one per request) stores only what each has of its own.
    #: Advisory notifications dropped because the consumer fell behind.
    dropped = 0
    #: The stream was ended because a message that can not be dropped did not fit.
    overflowed = False
    #: The final message was put (set under the lock; a plain field, read without it,
    #: since every producer and the consumer ask, on every request).
    finished = False
    #: A consumer holds the stream (see :meth:`attach`).
    attached = False
    #: Set by the consumer once the final message went out in a complete response: no
    #: resume can need this stream's stored events any more.
    delivered = False
    #: Another worker follows this stream's key (it took a resume over): each event
    #: stored from now on rings the bus.
    followed_elsewhere = False
    #: The store budget of the request that consumes this stream: a producer's store call
    #: for the stream runs in ``budget.lent()`` (:meth:`Budget.lent`).
    budget: Budget | None = None
    # A plain lock, and a Condition on it made only when a consumer first has to wait:
    # most requests are answered before their consumer looks, and a Condition is Python
    # code at every enter, exit and notify.
    _cond: threading.Condition | None = None
    _waiting = 0             # consumers waiting in take() (0: nobody to wake)
    _queued = 0              # the sum of _sizes
    _ended = False           # no more messages will come (session over, closed)
    _disconnect = False      # the server asks the consumer to drop the connection
    _skip_through = 0        # events up to this sequence number were replayed
    _consumer = 0            # the current consumer's token (0: none yet)
    _gone = False            # the consumer left (see consumer_gone)
    _gone_event: threading.Event | None = None  # made when first asked for
    _refill: Callable[[], None] | None = None
    _poked = False

    def __init__(self, key: str | None = None, *, final_id: object = None,
                 on_final: Callable[[ResponseStream], None] | None = None,
                 max_bytes: int = MAX_QUEUED_BYTES) -> None:
        self.key = key
        #: The request id whose response ends this stream (``None``: a standalone stream).
        self.final_id = final_id
        self._on_final = on_final
        self._lock = threading.Lock()
        self._items: deque[Item] = deque()
        self._sizes: deque[int] = deque()  # each item's encoded size, in step with _items
        self._max_bytes = max_bytes

    # -- producers -----------------------------------------------------------------------

    def put(self, message: Message, event_id: str | None = None) -> None:
        """Queue ``message`` for the consumer. Bounded by ``max_bytes`` of queued messages
        (the final answer not counted, nor refused: it ends the stream): when one does
        not fit, the oldest queued progress and log notifications are dropped to make
        room; a progress or log notification that still does not fit is dropped itself;
        any other message that does not fit ends the stream (the consumer sends what is
        queued and stops: a 2026-07-28 client sees its stream end without the answer,
        which cancels the request; a handshake-era one may resume from the event store)."""
        final = (isinstance(message, (Response, ErrorResponse))
                 and self.final_id is not None and message.id == self.final_id)
        size = 0 if final else _size(message)
        warn = ""
        with self._lock:
            if self._ended:
                return
            # Stored before it was put, and already replayed from the store by a resume
            # that raced with it: not again.
            if not (event_id and _seq(event_id) <= self._skip_through):
                fits = True
                if self._queued + size > self._max_bytes:
                    fits, warn = self._make_room(message, size)
                if fits:
                    self._items.append((event_id, message))
                    self._sizes.append(size)
                    self._queued += size
            if final and not self._ended:
                self.finished = True
            self._wake()
        if warn:
            logger.warning("a response stream's consumer fell behind: %s (at most %d bytes "
                           "are queued)", warn, self._max_bytes)
        if final and self._on_final is not None:
            self._on_final(self)

    def _wake(self) -> None:
        """(Under the lock) Wake the consumers waiting in :meth:`take`, if any."""
        if self._waiting:
            assert self._cond is not None
            self._cond.notify_all()

    def _make_room(self, message: Message, size: int) -> tuple[bool, str]:
        """(Under the lock) Drop queued advisory notifications, oldest first, until
        ``message`` fits; else drop it (advisory) or end the stream. Whether it fits now,
        and what to log (the first drop of a stream, and its end; "" for nothing)."""
        first = self.dropped == 0
        while self._queued + size > self._max_bytes and self._items and _droppable(
                self._items[0][1]):
            self._items.popleft()
            self._queued -= self._sizes.popleft()
            self.dropped += 1
        if self._queued + size > self._max_bytes and any(
                _droppable(item[1]) for item in self._items):
            kept = [(item, n) for item, n in zip(self._items, self._sizes, strict=True)
                    if not _droppable(item[1])]
            self.dropped += len(self._items) - len(kept)
            self._items = deque(item for item, _ in kept)
            self._sizes = deque(n for _, n in kept)
            self._queued = sum(self._sizes)
        if self._queued + size <= self._max_bytes:
            return True, ("progress and log notifications dropped" if first else "")
        if _droppable(message):
            self.dropped += 1
            return False, ("progress and log notifications dropped" if first else "")
        self.overflowed = self._ended = True
        return False, f"the stream is ended: {_name(message)} does not fit"

    @property
    def disconnect_requested(self) -> bool:
        return self._disconnect and not self._ended

    def end(self) -> None:
        """No more messages: the consumer finishes what is queued and stops."""
        with self._lock:
            self._ended = True
            self._wake()

    def disconnect(self) -> None:
        """Ask the current consumer to close its connection now (the client may resume)."""
        with self._lock:
            self._disconnect = True
            self._wake()

    def follow(self, refill: Callable[[], None]) -> None:
        """Fill this stream with ``refill()`` (which calls :meth:`put`), run by the consumer
        in :meth:`take`: at once, then whenever :meth:`poke` is called, and at least once
        per ``take``."""
        self._refill = refill

    @property
    def follower(self) -> Callable[[], None] | None:
        """What fills this stream from the store (``None``: this process's producers)."""
        return self._refill

    def poke(self) -> None:
        """New events are waiting in the store: the consumer runs its refill now."""
        with self._lock:
            self._poked = True
            self._wake()

    # -- the consumer --------------------------------------------------------------------

    def attach(self, skip_through: int = 0) -> int:
        """Become the consumer, taking over from any current one; return this consumer's
        token. Queued items whose event sequence number is at most ``skip_through`` are
        dropped (they were just replayed from the event store); see :meth:`skip_through`."""
        budget = current_budget()
        with self._lock:
            self._consumer += 1
            token = self._consumer
            self.attached = True
            self.budget = budget
            self._disconnect = False
            self._gone = False
            if self._gone_event is not None:
                self._gone_event.clear()
            self._wake()  # a superseded consumer waiting in take() leaves now
        if skip_through:
            self.skip_through(skip_through)
        return token

    def skip_through(self, seq: int) -> None:
        """Drop queued items up to event sequence number ``seq`` and any put later: they
        were replayed from the event store. Items without an event id were never stored,
        so never replayed: they stay."""
        with self._lock:
            self._skip_through = max(self._skip_through, seq)
            kept = [(item, n) for item, n in zip(self._items, self._sizes, strict=True)
                    if item[0] is None or _seq(item[0]) > self._skip_through]
            self._items = deque(item for item, _ in kept)
            self._sizes = deque(n for _, n in kept)
            self._queued = sum(self._sizes)

    def current(self, consumer: int | None) -> bool:
        """Whether ``consumer`` (a token from :meth:`attach`; ``None``: whoever) still
        holds the stream."""
        return consumer is None or consumer == self._consumer

    def detach(self, consumer: int | None = None) -> bool:
        """The consumer ``consumer`` leaves; ``False`` (and nothing changes) when another
        consumer has taken over since."""
        with self._lock:
            if not self.current(consumer):
                return False
            gone = self._left()
        if gone is not None:
            gone.set()
        return True

    def _left(self) -> threading.Event | None:
        """(Under the lock) The consumer is gone: its event, if one was made, to set once
        the lock is released."""
        self.attached = False
        self._gone = True
        return self._gone_event

    def leave(self, cancel: threading.Event | None = None) -> None:
        """The current consumer is done (its response body closed, or its JSON answer
        written): detach it, and, if the final message had not been put by then, set
        ``cancel`` (closing a 2026-07-28 request's stream cancels the request)."""
        self.detach()
        if cancel is not None and not self.finished:
            cancel.set()

    @property
    def gone(self) -> bool:
        """The consumer left (and none has attached since)."""
        return self._gone

    @property
    def consumer_gone(self) -> threading.Event:
        """Set while the consumer is gone, for a handler that waits on it. Made when first
        asked for: most responses end without anyone waiting, and an Event is a Condition
        and a lock per response."""
        gone = self._gone_event
        if gone is None:
            with self._lock:
                gone = self._gone_event
                if gone is None:
                    gone = self._gone_event = threading.Event()
                    if self._gone:
                        gone.set()
        return gone

    def settled_answer(self) -> Message | None:
        """The final answer, taken, when it is all a finished stream holds and nobody has
        attached to it: a request answered before its response began (a tool run on the
        request's own thread, say), which needs neither :meth:`take`'s wait nor its list.
        The stream is then left, as :meth:`leave` leaves it (its consumer gone; nothing to
        cancel, the answer being in). ``None`` otherwise, and nothing changes: then
        :meth:`take` as usual."""
        if not self.finished or self._refill is not None:
            return None
        with self._lock:
            if len(self._items) != 1 or self._consumer or self._disconnect:
                return None
            message = self._items[0][1]
            if not isinstance(message, (Response, ErrorResponse)):
                return None
            self._items.clear()
            self._sizes.clear()
            self._queued = 0
            self.delivered = True
            gone = self._left()
        if gone is not None:
            gone.set()
        return message

    def take(self, timeout: float, consumer: int | None = None) -> tuple[list[Item], bool]:
        """Wait up to ``timeout`` for items; return them and whether the stream is over for
        this consumer (final message taken, ended, asked to disconnect, or taken over by
        another consumer: then nothing is taken)."""
        deadline = time.monotonic() + timeout
        while True:
            refill = self._refill
            if refill is not None:
                with self._lock:
                    self._poked = False
                refill()  # outside the lock: it puts
            with self._lock:
                poked = False
                while not self._items and not self._ended and not self._disconnect:
                    if not self.current(consumer):
                        return [], True
                    if self._poked and refill is not None:
                        poked = True
                        break
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return [], False
                    cond = self._cond
                    if cond is None:
                        cond = self._cond = threading.Condition(self._lock)
                    self._waiting += 1
                    try:
                        cond.wait(remaining)
                    finally:
                        self._waiting -= 1
                if poked:
                    continue
                if not self.current(consumer):
                    return [], True
                items = list(self._items)
                self._items.clear()
                self._sizes.clear()
                self._queued = 0
                done = self.finished or self._ended or self._disconnect
                return items, done and (not self._items)


def _size(message: Message) -> int:
    """``message``'s encoded size (kept on it: written later without encoding again)."""
    try:
        return len(jsonrpc.encode(message))
    except UnencodableMessageError:
        return 0  # the consumer answers it with an encodable stand-in


def _droppable(message: Message | None) -> bool:
    return isinstance(message, Notification) and message.method in DROPPABLE


def _name(message: Message) -> str:
    method = getattr(message, "method", None)
    return method if isinstance(method, str) else type(message).__name__


def _seq(event_id: str | None) -> int:
    if not event_id:
        return 0
    seq = parse_decimal(event_id.rpartition("_")[2])
    return 0 if seq is None else seq
