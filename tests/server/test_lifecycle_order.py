"""``notifications/initialized`` takes effect in message order, not when the notification
thread gets to it.

Notifications run on their own thread behind a queue, requests on handler threads. The
session used to become READY only when the notification thread reached
``notifications/initialized``, so a request sent right after it could be answered first,
and a ``list_changed`` sent meanwhile was silently dropped (the session was "not yet
initialized"). A slow notification handler makes the window as wide as it likes.
"""

from __future__ import annotations

import threading

from mcpsync import Server
from mcpsync.protocol.jsonrpc import Notification, Request, Response
from mcpsync.transports.memory import memory_pair
from tests.helpers import WAIT


def _receive(transport, timeout: float = WAIT):
    """The next message, or ``None`` after ``timeout`` (the reader thread ends when the
    session closes its end)."""
    box: list[object] = []
    reader = threading.Thread(target=lambda: box.append(transport.receive()),
                              name="test-raw-receive", daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else None


def test_initialized_takes_effect_before_later_requests_even_behind_a_slow_handler():
    server = Server("order")
    gate = threading.Event()
    entered = threading.Event()

    @server.notification_handler("notifications/slow")
    def slow(session, params):
        entered.set()
        gate.wait(WAIT)  # holds the notification thread

    @server.tool()
    def ping_tool() -> str:
        return "pong"

    raw, end = memory_pair()
    session = server.connect(end)
    try:
        raw.send(Request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "raw", "version": "0"}}))
        assert isinstance(raw.receive(), Response)
        raw.send(Notification("notifications/slow"))
        assert entered.wait(WAIT)
        raw.send(Notification("notifications/initialized"))  # queued behind "slow"
        raw.send(Request(2, "tools/list"))
        listed = _receive(raw)
        assert isinstance(listed, Response), listed  # not "before initialized"
        assert listed.id == 2
        server.add_tool(lambda: "new", name="added")
        changed = _receive(raw)  # a list_changed, not silently dropped
        assert isinstance(changed, Notification), changed
        assert changed.method == "notifications/tools/list_changed"
    finally:
        gate.set()
        session.close()
        raw.close()
