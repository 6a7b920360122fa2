"""How much one connection may take on, and how long it waits: :class:`ConnectionLimits`.

Grouped because they are given together (a server's handler cap and request timeout, a
client's notification bounds), and passed down unchanged: each part of the connection
reads the ones it enforces. ``docs/limits.md`` says what each bounds for a user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Seconds a request given no timeout of its own waits for its answer.
DEFAULT_TIMEOUT: Final = 60.0
#: Inbound notifications waiting for the notification thread, at most (count and bytes).
DEFAULT_MAX_QUEUED_NOTIFICATIONS: Final = 1000
DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES: Final = 64 * 1024 * 1024


@dataclass(frozen=True)
class ConnectionLimits:
    """The bounds of one :class:`~mcpsync.engine.connection.Connection`.

    ``max_handlers`` and ``max_backlog``: the handler pool it makes when it is given none
    (threads, then queued requests; past both a request is answered "busy"); the cap also
    bounds displaced inline readers. ``request_timeout``: seconds a request given no
    ``timeout`` waits. ``drain_timeout``: seconds running handlers get to write their
    answers when the peer's input ends. ``max_queued_notifications`` and
    ``max_queued_notification_bytes``: inbound notifications waiting for the notification
    thread (count, and their encoded size); past either, new ones are dropped.
    """

    max_handlers: int = 64
    max_backlog: int = 4096
    request_timeout: float = DEFAULT_TIMEOUT
    drain_timeout: float = 0.0
    max_queued_notifications: int = DEFAULT_MAX_QUEUED_NOTIFICATIONS
    max_queued_notification_bytes: int = DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES
