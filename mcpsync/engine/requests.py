"""What one inbound request is, as the engine hands it to the dispatcher.

Kept apart from :mod:`.connection` because the dispatcher, the HTTP app and the listen
machinery build and read these without needing the connection itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..dispatch.inbound import TransportContext
    from ..dispatch.outbound import OutboundChannel
    from ..protocol.jsonrpc import Message, RequestId

logger = logging.getLogger("mcpsync.engine")


class CancelEvent(threading.Event):
    """A :class:`threading.Event` that also runs callbacks when it is first set.

    Lets a handler that waits on an event of its own (a ``subscriptions/listen`` waiting
    for work) be woken by the request's cancellation as well, without polling.

    Every inbound request gets one and almost none is ever waited on, so it is made for
    that: one lock, and the :class:`threading.Condition` a waiter needs is made by the
    first :meth:`wait` (a ``threading.Event`` makes a Condition up front, which cost a
    measurable share of a quick call).
    """

    # Made when first needed (class defaults until then: one event per request).
    _cond: threading.Condition | None = None
    _callbacks: list[Callable[[], None]] | None = None

    def __init__(self) -> None:  # no super().__init__(): every method is replaced below
        self._flag = False
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set

    def set(self) -> None:
        with self._lock:
            if self._flag:
                return
            self._flag = True
            cond = self._cond
            callbacks, self._callbacks = self._callbacks, None
        if cond is not None:
            with cond:
                cond.notify_all()
        for callback in callbacks or ():
            try:
                callback()
            except Exception:
                logger.exception("cancellation callback failed")

    def clear(self) -> None:
        with self._lock:
            self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        with self._lock:
            if self._flag:
                return True
            cond = self._cond
            if cond is None:
                cond = self._cond = threading.Condition(threading.Lock())
        with cond:  # set() notifies under cond after setting the flag: no lost wake-up
            return cond.wait_for(lambda: self._flag, timeout)

    def _at_fork_reinit(self) -> None:
        self._lock = threading.Lock()
        self._cond = None

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` once the event is set (at once if it already is)."""
        with self._lock:
            if not self._flag:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(callback)
                return
        callback()


class InboundRequest:
    """One request from the peer, as the engine hands it to the dispatcher.

    ``cancelled`` is set when the peer cancels it, the connection ends or the server
    shuts down. ``done`` becomes true just before the response is written: anything that
    would belong to the request after that point must fail loudly. ``transport``: what the
    transport knew of the peer when the request arrived (``None`` on a client).
    ``connection``: the channel it came in on (a ``Connection``, or a 2026-07-28 HTTP
    request's own stream).
    """

    __slots__ = ("cancelled", "connection", "done", "id", "method", "params", "transport")

    def __init__(
        self, connection: OutboundChannel, request_id: RequestId, method: str,
        params: dict[str, Any], transport: TransportContext | None = None,
    ) -> None:
        self.connection = connection
        self.id = request_id
        self.method = method
        self.params = params
        self.transport = transport
        self.cancelled = CancelEvent()
        self.done = False


class Routed(NamedTuple):
    """A message as the receive middleware passed it on (possibly changed), with the
    context it was routed in: what an HTTP session relays to the worker that waits for
    it (see :meth:`Connection.deliver <mcpsync.engine.connection.Connection.deliver>`)."""

    message: Message
    transport: TransportContext | None
