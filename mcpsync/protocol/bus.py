"""The bus between the workers of one deployment: the protocol every side of it speaks.

A bus carries small JSON objects to every worker of the deployment (the publisher's own
process included; a receiver skips what it sent itself). It is a doorbell and a
messenger, never a store: delivery is at most once and only to workers listening at that
moment. Whatever must not be lost is written to a store first, and the bus only says
"look now".

Two relays speak on it: the server's (:mod:`mcpsync.server.event_relay`: resource updates, list
changes and task statuses for the 2026-07-28 ``subscriptions/listen`` streams of every
worker) and the HTTP app's (:mod:`mcpsync.http.relay`: what a handshake-era session needs
from the worker that holds it). The protocol sits here, below both, so that neither
imports the other for it. Implementations: :class:`mcpsync.http.bus.InProcessBus` (apps
in one process) and ``mcpsync.redis.RedisBus`` (Redis pub/sub, many machines).
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


__all__ = ["Bus", "BusMessage"]
