"""The server the task tests drive: one tool per task behaviour, each a plain blocking
function. Served in memory, on stdio (``python -m tests.tasks.task_server``) and over HTTP.
"""

from __future__ import annotations

from mcpsync import CallToolResult, HandlerContext, MCPError, Server, TextContent
from mcpsync.tasks import RunAsTask

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
YES = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

def make_server(**options: object) -> Server:
    server = Server("task-tests", "1.0.0", request_state_key="task-tests",
                    **options)  # type: ignore[arg-type]

    @server.tool()
    def plain(name: str) -> str:
        """Never a task."""
        return f"Hello, {name}!"

    @server.tool(task="optional")
    def slow(ctx: HandlerContext, seconds: float = 0.0) -> str:
        """Sleeps, waking at once when cancelled."""
        ctx.progress(0.5, 1.0, "half way")
        ctx.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(task="required")
    def must_task(ctx: HandlerContext) -> str:
        """Only runs as a task."""
        return "ran as a task"

    @server.tool(task="optional")
    def tool_error() -> CallToolResult:
        """Reports a tool execution error."""
        return CallToolResult(content=[TextContent(text="it broke")], is_error=True)

    @server.tool(task="optional")
    def crash(ctx: HandlerContext) -> str:
        """Fails with a JSON-RPC error."""
        raise MCPError("no such widget", code=-32602, data={"widget": 7})

    @server.tool(task="optional")
    def ask_name(ctx: HandlerContext) -> str:
        """Elicits a name."""
        answer = ctx.elicit("Your name?", NAME)
        return f"Hello, {(answer.content or {}).get('name', '?')}!"

    @server.tool(task="optional")
    def ask_two(ctx: HandlerContext) -> str:
        """Two questions at once."""
        first, second = ctx.ask_all(lambda: ctx.elicit("Name?", NAME),
                                    lambda: ctx.elicit("Sure?", YES))
        return f"{(first.content or {}).get('name')}/{(second.content or {}).get('ok')}"

    @server.tool(task="optional")
    def ask_model(ctx: HandlerContext) -> str:
        """Samples the client's model, then lists its roots."""
        reply = ctx.sample("Say hi", max_tokens=5)
        roots = ctx.list_roots()
        return f"{reply.text} ({len(roots)} roots)"

    @server.tool(task="optional")
    def ask_nested(ctx: HandlerContext) -> str:
        """ask_all where one question asks twice: each answer must reach its own ask."""

        def pair() -> str:
            first = ctx.elicit("A?", NAME)
            second = ctx.elicit("B?", NAME)
            return f"{(first.content or {}).get('name')}+{(second.content or {}).get('name')}"

        both, third = ctx.ask_all(pair, lambda: ctx.elicit("C?", NAME))
        return f"{both}/{(third.content or {}).get('name')}"

    @server.tool(task="optional")
    def detaching(ctx: HandlerContext) -> str:
        """Written for plain calls: detaches, and still works as a task."""
        background = ctx.detach()
        background.check_cancelled()
        return f"detached from {type(ctx).__name__}"

    @server.tool(task="required", defer_task=True)
    def ask_then_task(ctx: HandlerContext) -> str:
        """Asks a name in the plain call, then continues as a task."""
        answer = ctx.elicit("Your name?", NAME)
        raise RunAsTask(_later, (answer.content or {}).get("name", "?"))

    return server


def _later(ctx: HandlerContext, name: str) -> str:
    ctx.check_cancelled()
    return f"Later, {name}!"


server = make_server()

if __name__ == "__main__":
    server.run_stdio()
