"""A server whose tools hand hostile values back (issue #11): used over stdio (as a
subprocess) and over HTTP (imported) by the wire-robustness tests.

Run as a script it serves stdio, then prints ``stdout restored`` on the real stdout: a
line that only appears if ``run_stdio`` gave the descriptor back on its way out.
"""

from __future__ import annotations

import sys
import time

from mcpsync import HandlerContext, InvalidParamsError, ProtocolOptions, Server, ToolError
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("hardening", version="1.0.0",
                protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                request_state_key="hardening-key")


@server.tool()
def echo(text: str) -> str:
    """Return the text (a lone surrogate in it makes the result unencodable)."""
    return text


@server.tool()
def fail(text: str) -> str:
    """Fail on purpose with the text ``text`` (an isError result that says it)."""
    raise ToolError(text)


@server.tool()
def refuse(text: str) -> str:
    """Raise an MCPError whose message is ``text`` (a JSON-RPC error)."""
    raise InvalidParamsError(text)


@server.tool()
def say(ctx: HandlerContext, text: str) -> str:
    """Log ``text`` to the client, then answer."""
    ctx.log("info", text)
    return "said"


@server.tool()
def not_a_number() -> float:
    """A result JSON cannot carry (NaN)."""
    return float("nan")


@server.tool()
def deep(levels: int) -> dict:
    """A structured result nested ``levels`` deep: far too deep for the encoder."""
    value: dict = {}
    for _ in range(levels):
        value = {"v": value}
    return value


@server.tool()
def nap(ctx: HandlerContext, seconds: float = 30.0) -> str:
    """Sleep, waking at once when cancelled."""
    ctx.sleep(seconds)
    return "rested"


@server.tool()
def hold(ctx: HandlerContext) -> str:
    """Ignore cancellation for a while: say on stderr when started, and when cancelled and
    the session is over (the server's shutdown now waits for this thread)."""
    session = ctx.detach()  # its ``cancelled`` is the end of the session
    print("hold: started", file=sys.stderr, flush=True)
    if ctx.cancelled.wait(60) and session.cancelled.wait(60):
        print("hold: cancelled", file=sys.stderr, flush=True)
    time.sleep(60)  # like a query that cannot be interrupted
    return "held"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}"


@server.completer("greet", "name")
def complete_name(value: str, context: dict[str, str]) -> list[str]:
    return [n for n in ("Ada", "Alan") if n.startswith(value)]


@server.resource("test://doc/{name}")
def doc(name: str) -> str:
    return f"doc {name}"


if __name__ == "__main__":
    server.run_stdio()
    print("stdout restored", flush=True)
