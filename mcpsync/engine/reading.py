"""Who reads a connection's stream, and the two loops that read it: :class:`Reading`.

* The **reader threads** (:class:`~mcpsync.engine.inline.Readers`: one reads at a time)
  run :meth:`Reading._loop`: receive, route (the connection's ``take``), run a request
  routed to run inline, and, on a client over stdio, lend the stream to callers while
  nothing is pending.
* A **caller** reading its own answer (:mod:`~mcpsync.engine.read_role`: a client over a
  byte stream, never with inline runs) runs :meth:`Reading.read_own`: it routes whatever
  it reads exactly as the reader thread does, until its own answer has been routed.

Whichever thread finds the stream ended ends the connection (the connection's ``end``).
None of this exists in push mode: the owner hands messages to ``Connection.deliver``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..protocol.jsonrpc import RequestId
from ..transports.base import PolledTransport, Received, Transport
from .closing import Closing
from .inline import Readers
from .pending import PendingTable
from .read_role import CALLER_SLICE, ReadRole

#: Route one received item; False when the connection turned out to be closed.
Take = Callable[[Received], bool]
#: End the connection: why, and how long running handlers may take to answer.
End = Callable[[str, float], None]


class Reading:
    """The read side of one connection (see the module doc). ``pending``: the table of
    our calls, asked (never changed) whether anything waits for an answer."""

    def __init__(self, transport: Transport, pending: PendingTable, *, name: str,
                 push: bool, inline: bool, caller_reads: bool, max_displaced: int,
                 drain_timeout: float, closing: Closing, take: Take, end: End) -> None:
        self._transport = transport
        self._pending = pending
        self._drain_timeout = drain_timeout
        self._closing = closing
        self._take = take
        self._end = end
        #: Reader threads (none in push mode): one reads at a time, see engine/inline.py.
        self.readers: Readers | None = None if push else Readers(
            name, self._loop, max_displaced=max_displaced)
        #: ``caller_reads``: a caller may read its own answer (a client over stdio; never
        #: with inline runs, whose reader hand-over is engine/inline.py's).
        self.role: ReadRole | None = None
        self._polled: PolledTransport | None = None
        if (caller_reads and not push and not inline
                and isinstance(transport, PolledTransport) and transport.pollable):
            self.role = ReadRole()
            self._polled = transport

    def start(self) -> None:
        """Start the first reader thread (none in push mode)."""
        if self.readers is not None:
            self.readers.start()

    def close(self) -> None:
        """The connection ended: a lending reader and the watch thread stop."""
        if self.role is not None:
            self.role.close()
        if self.readers is not None:
            self.readers.close()

    def join(self, deadline: float) -> None:
        """Join the reader threads until ``deadline`` (``time.monotonic()``)."""
        if self.readers is not None:
            self.readers.join(deadline)

    # -- a caller reading its own answer -------------------------------------------------

    def read_own(self, request_id: RequestId, deadline: float) -> None:
        """A caller whose request is sent: read and route until ``request_id`` is no longer
        pending or ``deadline`` (``time.monotonic()``), when the stream is free; else
        return at once (the reader thread, or another caller, reads its answer)."""
        role = self.role
        if role is None:
            return
        try:
            if role.take():
                self._read_own(request_id, deadline)
        finally:
            # Also when a KeyboardInterrupt landed just after take() succeeded
            # (the stream stayed held by nobody reading: every later call hung).
            role.give_back(self._idle)

    def _read_own(self, request_id: RequestId, deadline: float) -> None:
        """A caller holding the read role: read and route until ``request_id`` is no longer
        pending (answered, cancelled, failed) or ``deadline`` (``time.monotonic()``)."""
        polled = self._polled
        assert polled is not None
        pending = self._pending
        reason, drain = "", self._drain_timeout
        while pending.has(request_id):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                item = polled.receive_within(min(left, CALLER_SLICE))
            except TimeoutError:
                continue
            except Exception as exc:
                reason = self._closing.receive_failed(exc)
                break
            if item is None:
                reason = "peer closed the connection"
                break
            if not self._take(item):
                reason, drain = "connection closed", 0.0
                break
        else:
            return
        self._end(reason, drain)

    def _idle(self) -> bool:
        """Nothing to read for anyone: no call pending, no message read and not taken."""
        polled = self._polled
        return self._pending.empty and not (polled is not None and polled.buffered)

    # -- the reader threads --------------------------------------------------------------

    def _loop(self) -> None:
        reason = "peer closed the connection"
        readers = self.readers
        assert readers is not None
        role = self.role
        displaced = False
        try:
            while True:
                try:
                    item = self._transport.receive()
                except Exception as exc:
                    reason = self._closing.receive_failed(exc)
                    break
                if item is None:
                    break
                routed = self._take(item)
                if not readers.run_deferred():
                    displaced = True  # another thread reads (and shuts down) now
                    return
                if not routed:
                    break
                if role is not None and self._idle() and not role.lend(self._idle):
                    break  # closed meanwhile (by a caller that was reading)
        finally:
            if not displaced:
                self._end(reason, self._drain_timeout)
