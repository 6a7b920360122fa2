"""The relay between the workers of one deployment: how a message that arrives at one
worker reaches the worker that needs it, with no sticky routing.

A bus carries small JSON objects to every worker of the deployment (the publisher's own
process included; a receiver skips what it sent itself). It is a doorbell and a
messenger, never a store: delivery is at most once and only to workers listening at that
moment. Whatever must not be lost is written to a store first (the event store holds a
session's stream; the task store holds tasks), and the bus only says "look now". What the
relay sends on it:

* a client's answer to a server request (elicitation, sampling, roots) that reached
  another worker than the one waiting for it;
* ``notifications/cancelled`` for a request running on another worker;
* "new events on stream K", for the worker that holds (or follows) that stream;
* a changed log level, a session ended by ``DELETE``;
* server-wide changes (a resource updated, a list changed, a task's status) for the
  2026-07-28 ``subscriptions/listen`` streams held by every worker.

Implementations: :class:`InProcessBus` (apps in one process: tests, several mounts) and
``mcpsync.redis.RedisBus`` (Redis pub/sub, many machines).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

#: A bus message: a JSON object with at least ``"kind"`` (a string).
BusMessage = dict[str, Any]


@runtime_checkable
class Bus(Protocol):
    """Thread-safe. ``publish`` may be called from any thread; callbacks run on the bus's
    own thread, one message at a time, in publish order per publisher, and must not block
    (hand slow work to another thread)."""

    def publish(self, message: BusMessage) -> None:
        """Send ``message`` to every subscriber of the deployment. Raise
        :class:`~mcpsync.errors.StoreUnavailableError` when the bus cannot be reached."""

    def subscribe(self, callback: Callable[[BusMessage], None]) -> Callable[[], None]:
        """Call ``callback`` with each message published from now on; returns the function
        that stops it."""

    def close(self) -> None:
        """Stop delivering and release the connection and thread (idempotent)."""
