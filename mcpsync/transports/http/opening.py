"""Requests sent with no caller's deadline (:meth:`HttpTransport.send` of a request): the
requests ``mcpsync run URL`` relays for its host, and a 2026-07-28 ``subscriptions/listen``
that stays open.

Nobody here knows how long their sender will wait: a stdio host does not say (MCP has no
deadline in ``_meta``), and a subscription waits for ever. So such a request is bounded the
way the standalone GET stream is: its answer must *begin* within ``head_timeout`` (default
``connect_timeout + read_timeout``, 80 s), counted from when its POST starts: the connect,
the answer's head and, for a JSON answer, its whole body. Past that its exchange is ended
(its socket shut down, so its thread returns at once) and the sender gets a
:class:`~mcpsync.errors.TransportTimeoutError` for it, as for any call that failed here. An
SSE answer that has begun lives on, each read bounded by ``read_timeout``: a long tool call
streams for as long as it runs, and the sender's ``notifications/cancelled`` (or its own
abandon) ends it at once. A server that trickles an answer's head therefore holds a thread
for ``head_timeout`` at most, not for ever.

A part of :class:`~mcpsync.transports.http.transport.HttpTransport` (a mixin). Thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ...errors import TransportTimeoutError
from ...protocol.deadline import Deadline
from ...protocol.jsonrpc import Request, RequestId
from ...protocol.redact import redact
from ...threads.watchdog import WATCHDOG
from ..base import CallFailed, Received
from .calls import CallExchanges
from .table import CallTable

__all__ = ["OpenRequests"]

#: The reason an exchange is ended with when its answer did not begin in time.
OVERDUE: Final = "its answer did not begin in time"
#: A request sent without a deadline (one that stays open, or relayed for a host).
NO_DEADLINE: Final = Deadline.never("an HTTP request")


class OpenRequests:
    """Sending a request with no deadline, bounded as the module docstring says (a mixin:
    the attributes and methods declared below are the transport's)."""

    _head_timeout: float
    _post_url: str
    _table: CallTable
    _exchanges: CallExchanges
    _put: Callable[[Received], None]

    if TYPE_CHECKING:
        def _begin(self, request: Request) -> None: ...
        def _submit(self, job: Callable[[], None]) -> None: ...
        def _forget(self, request_id: RequestId) -> None: ...
        def _exchange(self, request: Request, deadline: Deadline) -> None: ...

    def _send_open(self, request: Request) -> None:
        self._begin(request)
        try:
            self._submit(lambda: self._exchange_open(request))
        except BaseException:
            self._forget(request.id)
            raise

    def _exchange_open(self, request: Request) -> None:
        """Run ``request``'s exchange with the head alarm armed; report it overdue after."""
        alarm = WATCHDOG.arm(Deadline(self._head_timeout).at,
                             lambda: self._head_due(request.id))
        try:
            self._exchange(request, NO_DEADLINE)
        finally:
            alarm.cancel()
            if self._table.take_overdue(request.id):
                # Here, on the exchange's thread, not on the watchdog's: delivering it may
                # run the engine's code (it resolves the caller's Future). An answer that
                # was being fed at the very moment the alarm rang may precede it; its
                # sender ignores a second outcome for one id.
                self._put(CallFailed(request.id, TransportTimeoutError(redact(
                    f"{request.method} to {self._post_url}: the server did not answer in "
                    f"time (its answer did not begin within {self._head_timeout:g} s)"))))

    def _head_due(self, request_id: RequestId) -> None:
        """On the watchdog's thread (short, never blocks): end ``request_id``'s exchange
        unless it was answered, given up on, or is on an SSE answer already."""
        if self._table.mark_overdue(request_id):
            self._exchanges.end(request_id, OVERDUE)
