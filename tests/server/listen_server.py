"""A stdio server whose tools change its own lists and resources (for listen tests)."""

from __future__ import annotations

import threading

from mcpsync import ProtocolOptions, Server

server = Server("listen-stdio", request_state_key="listen-key",
                protocol=ProtocolOptions(cache_ttl_ms=60_000))


@server.tool()
def grow(name: str) -> str:
    """Register one more tool (announces tools list_changed)."""
    server.add_tool(lambda: name, name=name)
    return "ok"


@server.tool()
def touch(uri: str) -> str:
    """Announce that ``uri`` was updated."""
    server.notify_resource_updated(uri)
    return "ok"


@server.tool()
def stop_listening() -> str:
    """End every open subscription gracefully (from another thread, after answering)."""
    threading.Thread(target=server.end_subscriptions, daemon=True).start()
    return "ok"


@server.resource("notes://x")
def note_x() -> str:
    return "x"


if __name__ == "__main__":
    server.run_stdio()
