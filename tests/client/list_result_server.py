"""A server whose answers to ``tools/call`` carry a result that is not an object
(``"result": [1, 2, 3]``), made by its send middleware: for the client's handling of an
unreadable answer. ``python -m tests.client.list_result_server`` serves it on stdio."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpsync import HandlerContext, Server
from mcpsync.protocol.jsonrpc import Message, Response


def build() -> Server:
    server = Server("list-result")

    @server.tool()
    def broken() -> str:
        """Answered with a list where the result object should be."""
        return "never seen"

    @server.tool()
    def broken_streamed(ctx: HandlerContext) -> str:
        """The same, after a progress notification (over HTTP: an SSE answer)."""
        ctx.progress(1, total=1)
        return "never seen"

    @server.tool()
    def fine() -> str:
        """Answered as usual."""
        return "fine"

    def listify(message: Message, next_: Callable[[Message], Any]) -> Any:
        if isinstance(message, Response) and any(
                block.get("text") == "never seen" for block in
                message.result.get("content", []) if isinstance(block, dict)):
            message = Response(message.id, [1, 2, 3])  # type: ignore[arg-type]
        return next_(message)

    server.send_middleware.append(listify)
    return server


if __name__ == "__main__":
    build().run_stdio()
