"""The servers the hub tests configure: ``calc`` (run over stdio as ``python -m
tests.hub.servers calc``) and ``notes`` (served over HTTP in the test's process, or over
stdio the same way). Each has a tool, a resource, a template and a prompt, so that every
prefixing rule is exercised; ``calc``'s ``link`` tool returns a resource link and an
embedded resource (their URIs must come back prefixed); ``slow`` waits on its
cancellation (never a sleep) so that deadlines can be tested.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpsync import (
    CallToolResult,
    EmbeddedResource,
    HandlerContext,
    ResourceLink,
    Server,
    TextResourceContents,
)


def build_calc() -> Server:
    calc = Server("calc", version="1.0.0")

    @calc.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @calc.tool()
    def whoami() -> str:
        """The value of HUB_TEST_WHO in the server's environment."""
        return os.environ.get("HUB_TEST_WHO", "nobody")

    @calc.tool()
    def slow(ctx: HandlerContext, seconds: float) -> str:
        """Wait until cancelled or ``seconds`` pass."""
        ctx.sleep(seconds)
        return "slept"

    @calc.tool()
    def link() -> CallToolResult:
        """A resource link and an embedded resource."""
        return CallToolResult([
            ResourceLink(uri="memo://pi", name="pi"),
            EmbeddedResource(resource=TextResourceContents(uri="memo://pi", text="3.14"))])

    @calc.resource("memo://pi")
    def pi() -> str:
        return "3.14159"

    @calc.resource("memo://square/{n}")
    def square(n: str) -> str:
        return str(int(n) ** 2)

    @calc.completer("explain", "topic")
    def topics(value: str, context: dict[str, str]) -> list[str]:
        return [t for t in ("tides", "time", "tea") if t.startswith(value)]

    @calc.completer("memo://square/{n}", "n")
    def numbers(value: str, context: dict[str, str]) -> list[str]:
        return [n for n in ("1", "10", "12") if n.startswith(value)]

    @calc.prompt()
    def explain(topic: str) -> str:
        """Explain a topic."""
        return f"Explain {topic} simply."

    return calc


def build_notes() -> Server:
    notes = Server("notes", version="2.0.0")

    @notes.tool()
    def add(text: str) -> str:
        """Add a note (same tool name as calc's: the prefix tells them apart)."""
        return f"noted: {text}"

    @notes.resource("memo://pi")
    def pi() -> str:
        return "a note about pi"

    @notes.prompt()
    def summarize(text: str) -> str:
        """Summarize a text."""
        return f"Summarize: {text}"

    return notes


if __name__ == "__main__":
    {"calc": build_calc, "notes": build_notes}[sys.argv[1]]().run_stdio()
