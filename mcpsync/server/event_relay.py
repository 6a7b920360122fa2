"""Server-wide events across workers: what one process raises, every process's
2026-07-28 ``subscriptions/listen`` streams hear.

A listen stream is held by one worker, but the change it waits for may happen on another
(a resource updated there, a tool added there, an extension's item, such as a task,
that changes there). :meth:`Server.relay_events <mcpsync.Server.relay_events>` joins the workers
through a :class:`~mcpsync.protocol.bus.Bus`: each server-wide event raised here is also
published (``{"kind": "event", "origin": ..., "event": ...}``), and each one published by
another process is handed to this process's listen registry exactly as if raised here.

What is *not* done here, on purpose:

* Received events are never published again (no echo between workers), and a process
  skips its own (the ``origin`` check): each event is delivered once per worker.
* Received events never reach handshake-era sessions: a session's notifications travel
  through its own outbox, which the session relay carries to the worker holding its
  stream. Delivering them here too would deliver them twice.

Threads: publishing runs on the thread that raised the event; a bus that fails is logged
and never raised into the handler that changed something (the change still reaches this
process's listeners). Delivery runs on the bus's thread and only posts to listeners
(a short lock each), never sends, never reads a store.

A followed item's status carries its params when they are small (up to
:data:`MAX_EVENT_BYTES` encoded); larger ones (a big result) are sent as a reference only,
and each listen that follows the item reads it from the extension's shared store on its
own thread, with its own owner (see :meth:`ListenRegistry.status
<mcpsync.server.listen.ListenRegistry.status>`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.bus import Bus, BusMessage
from ..protocol.versions import LIST_FIELDS

if TYPE_CHECKING:
    from .listen import ListenRegistry

logger = logging.getLogger("mcpsync.server")

#: The largest item status (its params, JSON-encoded) carried on the bus itself; past it
#: the event names the item only, and listens read it from the extension's store.
MAX_EVENT_BYTES = 64 * 1024
_LISTS = frozenset(LIST_FIELDS.values())


class EventRelay:
    """The buses one Server publishes its events on, and the delivery of theirs.
    Thread-safe."""

    def __init__(self, listeners: ListenRegistry) -> None:
        self._listeners = listeners
        self._lock = threading.Lock()
        self._buses: list[Bus] = []  # once per attach (a bus may be attached twice)
        self._unsubscribe: dict[int, Callable[[], None]] = {}
        self._origin = ("", -1)

    @property
    def origin(self) -> str:
        """This process's random id on the bus. Made again after a fork: a Server built
        before gunicorn forks its workers (``--preload``) must not give them one id, or
        each would take the others' events for its own and skip them."""
        pid = os.getpid()
        with self._lock:
            if self._origin[1] != pid:
                self._origin = (os.urandom(16).hex(), pid)
            return self._origin[0]

    def attach(self, bus: Bus) -> Callable[[], None]:
        """Publish on ``bus`` and deliver from it; returns the function that stops both
        (idempotent). Attaching one bus twice (``relay_events`` called by hand and by an
        app given ``bus=``, or two apps of one Server) shares one subscription, so no event
        is published or delivered twice; it stops when the last of them stops."""
        with self._lock:
            attached = any(b is bus for b in self._buses)
            self._buses.append(bus)
        if not attached:
            try:
                self._unsubscribe[id(bus)] = bus.subscribe(self._receive)
            except BaseException:
                with self._lock:
                    self._buses.remove(bus)
                raise
        stopped = threading.Event()

        def stop() -> None:
            if stopped.is_set():
                return
            stopped.set()
            with self._lock:
                index = next(i for i, b in enumerate(self._buses) if b is bus)
                del self._buses[index]
                last = not any(b is bus for b in self._buses)
                unsubscribe = self._unsubscribe.pop(id(bus), None) if last else None
            if unsubscribe is not None:
                unsubscribe()

        return stop

    # -- out ----------------------------------------------------------------------------

    def resource_updated(self, uri: str) -> None:
        self._publish({"event": "resource_updated", "uri": uri})

    def list_changed(self, kind: str) -> None:
        self._publish({"event": "list_changed", "list": kind})

    def status(self, field: str, item_id: str, owner: str, version: int,
               params: dict[str, Any]) -> None:
        event: dict[str, Any] = {"event": "status", "field": field, "id": item_id,
                                 "owner": owner, "version": version}
        try:
            size = len(json.dumps(params, separators=(",", ":")))
        except (TypeError, ValueError):  # not plain JSON: the listens read the store
            size = MAX_EVENT_BYTES + 1
        if size <= MAX_EVENT_BYTES:
            event["params"] = params
        self._publish(event)

    def _publish(self, event: dict[str, Any]) -> None:
        with self._lock:
            buses = list({id(b): b for b in self._buses}.values())
        if not buses:
            return
        message: BusMessage = {"kind": "event", "origin": self.origin, **event}
        for bus in buses:
            try:
                bus.publish(message)
            except Exception as exc:  # the change stands locally; other workers' clients
                logger.warning(  # poll or re-read when they next ask
                    "server event %s not relayed to the other workers: %s: %s",
                    event["event"], type(exc).__name__, exc)

    # -- in -----------------------------------------------------------------------------

    def _receive(self, message: BusMessage) -> None:
        """On the bus's thread: another process's event to the listens here."""
        try:
            if message.get("kind") != "event" or message.get("origin") == self.origin:
                return
            self._deliver(message)
        except Exception:  # never into the bus's thread: one bad message, one log line
            logger.exception("a relayed server event could not be delivered")

    def _deliver(self, message: BusMessage) -> None:
        event = message.get("event")
        if event == "resource_updated":
            uri = message.get("uri")
            if isinstance(uri, str):
                self._listeners.resource_updated(uri)
                return
        elif event == "list_changed":
            kind = message.get("list")
            if kind in _LISTS:
                self._listeners.list_changed(str(kind))
                return
        elif event == "status":
            field, item_id = message.get("field"), message.get("id")
            owner, version, params = (message.get("owner"), message.get("version"),
                                      message.get("params"))
            if (isinstance(field, str) and isinstance(item_id, str) and isinstance(owner, str)
                    and isinstance(version, int) and not isinstance(version, bool)
                    and (params is None or isinstance(params, dict))):
                self._listeners.status(field, item_id, owner, params, version=version)
                return
        logger.debug("ignored a malformed relayed event: %.200r", message)
