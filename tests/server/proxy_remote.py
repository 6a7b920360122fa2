"""The remote server the proxy tests put behind ``Server.proxy``: run as a stdio subprocess
(``python -m tests.server.proxy_remote``), served over HTTP, or used in process.

``make()`` builds a fresh one; ``cancelled`` (in process only) is set when ``wait`` sees
its call cancelled; over stdio, ``wait`` writes the ``marker`` path it is given instead.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from mcpsync import HandlerContext, Server, ToolError
from mcpsync.errors import InvalidParamsError


class Remote:
    """A remote server and what its tools let the test observe."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.started = threading.Event()
        self.answers: list[object] = []
        self.server = server = Server("remote", version="2.0.0",
                                      instructions="the remote's instructions",
                                      request_state_key=b"remote-test-key")

        @server.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        @server.tool()
        def steps(ctx: HandlerContext, n: int = 3) -> str:
            """Report progress and log at each step."""
            for i in range(1, n + 1):
                ctx.info(f"step {i}", logger="remote")
                ctx.progress(i, total=n, message=f"step {i}")
            return f"{n} steps"

        @server.tool()
        def ask(ctx: HandlerContext) -> str:
            """Ask the user for a name."""
            answer = ctx.elicit("Your name?", {"type": "object",
                                               "properties": {"name": {"type": "string"}},
                                               "required": ["name"]})
            self.answers.append(answer.content)
            if answer.action != "accept":
                return f"no name ({answer.action})"
            return f"hello {answer.content['name']}"

        @server.tool()
        def wait(ctx: HandlerContext, marker: str = "") -> str:
            """Block until cancelled (at most 30 s); then note it was."""
            self.started.set()
            if ctx.cancelled.wait(30):
                self.cancelled.set()
                if marker:
                    Path(marker).write_text("cancelled")
            return "not cancelled"

        @server.tool()
        def refuse(what: str) -> str:
            """Answer a protocol error (-32602)."""
            raise InvalidParamsError(f"Invalid params: no {what}", data={"what": what})

        @server.tool()
        def broken() -> str:
            """Fail as a tool does on purpose: an isError result with this text."""
            raise ToolError("the tool broke")

        @server.tool()
        def die() -> str:
            """End the process at once (over stdio: the remote dies mid-call)."""
            os._exit(3)

        @server.tool()
        def pid() -> int:
            return os.getpid()

        @server.tool()
        def touch(uri: str) -> str:
            """Announce that ``uri`` changed (notifications/resources/updated)."""
            server.notify_resource_updated(uri)
            return uri

        @server.tool()
        def watched(uri: str) -> int:
            """How many subscribers (sessions, listen streams) ``uri`` has here."""
            return server.subscribers.count(uri)

        @server.resource("mem://readme", mime_type="text/plain")
        def readme() -> str:
            return "read me"

        @server.resource("mem://items/{item}")
        def item(item: str) -> str:
            return f"item {item}"

        @server.prompt()
        def review(topic: str) -> str:
            """Ask for a review."""
            return f"Please review {topic}."

        @server.completer("review", "topic")
        def topics(value: str, context: dict[str, str]) -> list[str]:
            return [t for t in ("apples", "apricots", "bananas") if t.startswith(value)]


server = Remote().server

if __name__ == "__main__":
    server.run_stdio()
