"""The server the fuzzer attacks: one of every feature a fuzzed message can reach (tools with
and without a context, a fixed and a templated resource, a prompt with a completer,
subscriptions, progress and logging), plus ``end_listens`` so that a fuzz case can close
the ``subscriptions/listen`` streams it opened instead of leaving them to pile up. Served
over stdio when run as a script; the HTTP fuzz tests serve ``server.wsgi_app()``."""

from __future__ import annotations

import threading

from mcpsync import HandlerContext, ProtocolOptions, Server, ServerLimits
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("fuzz-target", version="1.0.0",
                protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                request_state_key="fuzz-key", limits=ServerLimits(max_handlers=16))


@server.tool()
def echo(text: str) -> str:
    """Echo the text back (runs inline on HTTP: no context)."""
    return text


@server.tool()
def work(ctx: HandlerContext, steps: int = 2, text: str = "") -> str:
    """Report progress and log, then answer (runs on a handler thread)."""
    for i in range(min(max(steps, 0), 5)):
        ctx.check_cancelled()
        ctx.progress(i + 1, total=steps, message="step")
        ctx.log("info", {"step": i}, logger="fuzz")
    return f"worked {text}"


@server.tool()
def end_listens() -> str:
    """End every open subscriptions/listen stream gracefully (after answering)."""
    threading.Thread(target=server.end_subscriptions, name="fuzz-end-listens",
                     daemon=True).start()
    return "ok"


@server.resource("fuzz://doc", mime_type="text/plain")
def doc() -> str:
    """A fixed resource."""
    return "the doc"


@server.resource("fuzz://items/{item}")
def item(item: str) -> str:
    """A templated resource."""
    return f"item {item}"


@server.prompt()
def greet(name: str, tone: str = "plain") -> str:
    """A prompt with a required and an optional argument."""
    return f"Hello {name} ({tone})"


@server.completer("greet", "tone")
def complete_tone(value: str, context: dict[str, str]) -> list[str]:
    return [t for t in ("plain", "polite", "pirate") if t.startswith(value)]


if __name__ == "__main__":
    server.run_stdio()
