"""What a :class:`~mcpsync.engine.connection.Connection`'s owner plugs into it.

Two small value objects, so the constructor says what it is given in two words rather
than eight keywords: :class:`ConnectionEvents` (what the owner is told, and on which
thread) and :class:`ConnectionThreads` (which threads do the reading and the handling).
A server session passes both; a client passes ``caller_reads`` and a notification
callback. Both are frozen, hence thread-safe to share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..protocol.jsonrpc import Notification
from ..threads.pool import WorkerPool
from .inflight import InlineKey

NotificationHandler = Callable[[Notification], None]


@dataclass(frozen=True)
class ConnectionEvents:
    """Callbacks from a connection to its owner; each exception is logged, never raised.

    ``notification``: every inbound notification that is not progress, in arrival order,
    on the connection's ``{name}-notify`` thread (user code may run here).
    ``arrival``: protocol bookkeeping that must take effect in message order (a session's
    lifecycle), called on the receiving thread before a notification is queued; ``True``
    means it consumed the message. Never user code: it would stall the reader.
    ``closing``: once, when the connection starts to end, before running handlers are
    drained (long-lived handlers such as subscriptions can end gracefully).
    ``closed``: once, when everything has ended.
    """

    notification: NotificationHandler | None = None
    arrival: Callable[[Notification], bool] | None = None
    closing: Callable[[], None] | None = None
    closed: Callable[[], None] | None = None


@dataclass(frozen=True)
class ConnectionThreads:
    """Which threads read and handle.

    ``pool``: a shared handler pool (an HTTP app's sessions; the connection neither sizes
    nor shuts it down), else one of its own sized by ``limits.max_handlers``.
    ``push``: no reader thread; the owner calls ``Connection.deliver`` for each message.
    ``inline_key``: requests not known to be slow run on the reader thread itself
    (a server session; see :mod:`mcpsync.engine.inline`).
    ``caller_reads``: over stdio, a caller whose answer nobody is reading reads it itself
    (a client; see :mod:`mcpsync.engine.reading`).
    """

    pool: WorkerPool | None = None
    push: bool = False
    inline_key: InlineKey | None = None
    caller_reads: bool = False


#: The defaults: told nothing, a reader thread and a handler pool of its own.
NO_EVENTS = ConnectionEvents()
OWN_THREADS = ConnectionThreads()

__all__ = ["NO_EVENTS", "OWN_THREADS", "ConnectionEvents", "ConnectionThreads",
           "NotificationHandler"]
