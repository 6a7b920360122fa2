"""A server whose tools send the client custom requests and notifications (for the tests
of ``client.method_handler`` and ``client.notification_handler``). Run as a script, it
serves stdio."""

from __future__ import annotations

import json

from mcpsync import HandlerContext, PeerRequestError, RequestTimeoutError, Server

server = Server("custom-methods", request_state_key="custom-methods-key")


@server.tool()
def ask_custom(ctx: HandlerContext, text: str) -> str:
    """Send ``x/custom`` and return the client's answer as JSON."""
    return json.dumps(ctx.request("x/custom", {"text": text}))


@server.tool()
def ask_method(ctx: HandlerContext, method: str) -> str:
    """Send any method; report the client's error as ``method -> code: message``."""
    try:
        return json.dumps(ctx.request(method, {}))
    except PeerRequestError as exc:
        return f"{exc.method} -> {exc.peer_code}: {exc.peer_error.message}"


@server.tool()
def ask_briefly(ctx: HandlerContext, seconds: float) -> str:
    """Send ``x/slow`` with a short deadline: on timeout the server cancels it."""
    try:
        ctx.request("x/slow", {}, timeout=seconds)
    except RequestTimeoutError:
        return "timed out"
    return "answered"


@server.tool()
def announce(ctx: HandlerContext, method: str, text: str) -> str:
    """Send the notification ``method`` with ``{"text": text}``."""
    ctx.notify(method, {"text": text})
    return "sent"


if __name__ == "__main__":
    server.run_stdio()
