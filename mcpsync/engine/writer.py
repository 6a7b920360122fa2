"""Writing a connection's messages to its transport, one at a time: :class:`Writer`.

Writes are serialized by one lock held only around ``transport.send``: a message is
encoded before the lock is taken (the bytes are kept on the message, and the transport
reuses them). A write with a deadline (a call's, or a cancellation's grace) waits for its
turn only until then. What goes through the send middleware first is the connection's
(:meth:`~mcpsync.engine.connection.Connection._send`); this is its last step.
"""

from __future__ import annotations

import logging
import math
import threading

from ..errors import ConnectionClosedError, UnencodableMessageError
from ..protocol.deadline import Deadline, DeadlineExceeded
from ..protocol.jsonrpc import (
    ErrorResponse,
    Message,
    RequestId,
    Response,
    encode,
    unencodable_answer,
)
from ..transports.base import CallControl, Transport

logger = logging.getLogger("mcpsync.engine")


class Writer:
    """The write side of one transport. Thread-safe."""

    __slots__ = ("_calls", "_lock", "_name", "_transport")

    def __init__(self, transport: Transport, name: str) -> None:
        self._transport = transport
        self._name = name
        self._lock = threading.Lock()
        #: The transport's per-call hooks (HTTP): each request goes with the deadline its
        #: caller waits with, and a call given up on has its exchange ended at once.
        self._calls: CallControl | None = (transport if isinstance(transport, CallControl)
                                           else None)

    @property
    def calls(self) -> CallControl | None:
        """The transport's per-call hooks, when it has them."""
        return self._calls

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
                lock.release()
        except (ConnectionClosedError, UnencodableMessageError, DeadlineExceeded):
            raise
        except (OSError, ValueError) as exc:
            raise ConnectionClosedError(f"transport failed: {exc}") from exc


def _lock_wait(deadline: Deadline) -> float:
    """``Lock.acquire``'s ``timeout`` for a wait that ends with ``deadline``."""
    left = deadline.remaining()
    return -1 if left == math.inf else left
