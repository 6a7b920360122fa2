"""A stdio server whose tools are quick until told otherwise: for the tests of requests run
on the reader thread (tests/stdio/test_stdio_inline.py)."""

from __future__ import annotations

import threading

from mcpsync import HandlerContext, Server

server = Server("inline-test", version="1.0.0")
gate = threading.Event()


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def hold(wait: bool) -> str:
    """Quick with ``wait`` false; with it true, blocks until ``release`` is called."""
    if wait and not gate.wait(60):
        return "never released"
    return "held" if wait else "quick"


@server.tool()
def release() -> str:
    """Let every ``hold(wait=true)`` go."""
    gate.set()
    return "released"


@server.tool()
def until_cancelled(ctx: HandlerContext, wait: bool) -> str:
    """Quick with ``wait`` false; with it true, waits for the request's cancellation."""
    if wait and ctx.cancelled.wait(60):
        return "cancelled"
    return "quick"


@server.tool()
def chatty(ctx: HandlerContext, count: int) -> str:
    """``count`` progress notifications, then the answer."""
    for i in range(count):
        ctx.progress(i + 1, count)
    return f"sent {count}"


@server.tool()
def ask_roots(ctx: HandlerContext, ask: bool) -> str:
    """Quick with ``ask`` false; with it true, asks the client for its roots first."""
    if not ask:
        return "quick"
    return ",".join(root.uri for root in ctx.list_roots(timeout=30))


@server.tool()
def threads() -> list[str]:
    """The names of this process's threads now."""
    return sorted(t.name for t in threading.enumerate())


if __name__ == "__main__":
    server.run_stdio()
