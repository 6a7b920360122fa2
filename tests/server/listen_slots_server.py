"""A server with two handler slots and room for four listens (for the slot tests); run as a
script, it serves stdio."""

from __future__ import annotations

from mcpsync import HandlerContext, Server, ServerLimits

SLOTS = 2
MAX_SUBSCRIPTIONS = 4


def make_server() -> Server:
    server = Server("listen-slots", request_state_key="listen-slots-key",
                    limits=ServerLimits(max_handlers=SLOTS,
                                                max_subscriptions=MAX_SUBSCRIPTIONS))

    @server.tool()
    def work(ctx: HandlerContext) -> str:
        ctx.progress(1, total=1)
        return "worked"

    @server.prompt()
    def hello(ctx: HandlerContext) -> str:
        return "hi"

    @server.resource("notes://{name}")
    def note(ctx: HandlerContext, name: str) -> str:
        return f"note {name}"

    @server.completer("notes://{name}", "name")
    def complete_name(value: str, context: object = None) -> list[str]:
        return [value + "1"]

    @server.tool()
    def grow(name: str) -> str:
        """Register one more tool: every listen that follows tools hears of it."""
        server.add_tool(lambda: name, name=name)
        return "grown"

    @server.tool()
    def wait_listens(at_most: int) -> bool:
        """Block until at most ``at_most`` listens are open (bounded): a test's way to see
        that a closed listen is gone, whatever the transport."""
        return server.listeners.wait_ended(timeout=10.0, at_most=at_most)

    return server


server = make_server()

if __name__ == "__main__":
    server.run_stdio()
