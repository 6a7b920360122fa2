"""Listens hold no handler slot over HTTP either (issue #11, defect 3).

2026-07-28: each listen is a long POST whose handler runs on the app's worker pool, which
has ``max_handlers`` slots. The handshake era's equivalent, a GET stream and
``resources/subscribe``, holds only the WSGI server's thread for the stream: checked here
too, with more sessions streaming than there are slots.
"""

from __future__ import annotations

import threading

from mcpsync import Client
from tests.server import listen_slots_server
from tests.server.listen_slots_server import SLOTS
from tests.server.test_listen_slots import MODERN, WAIT, exercise


def test_modern_listens(serve):
    server = listen_slots_server.make_server()
    served = serve(server)
    exercise(lambda: Client.http(served.url, protocol_version=MODERN))
    assert server.listeners.wait_ended(timeout=WAIT)


def test_handshake_era_streams_and_subscriptions_take_no_slot(serve):
    server = listen_slots_server.make_server()
    served = serve(server)
    updated = [threading.Event() for _ in range(SLOTS + 2)]
    clients = []
    try:
        for index, event in enumerate(updated):
            def note(method, params, event=event):
                if method == "notifications/resources/updated":
                    event.set()

            client = Client.http(served.url, protocol_version="2025-11-25", on_notification=note)
            clients.append(client)
            sub = client.listen(resource_uris=[f"notes://n{index}"], timeout=WAIT)
            assert sub.active
        for client in clients:
            assert client.call_tool("work", timeout=WAIT).text == "worked"
            assert client.read_resource("notes://a", timeout=WAIT).contents
        for index in range(len(updated)):
            server.notify_resource_updated(f"notes://n{index}")
        assert all(event.wait(WAIT) for event in updated)
    finally:
        for client in clients:
            client.close()
