"""The mcpsync server the task *client* tests drive (``tests/tasks/test_client_against_mcpsync``):
one tool per behaviour the client must follow, each a plain blocking function. Served in
memory, on stdio (``python -m tests.tasks.client_task_server``) and over HTTP.

``report`` tells what the task tools saw (``started`` / ``done`` / ``cancelled`` by label),
so a test can check what the client did to a task on the server over any transport.
"""

from __future__ import annotations

import json
import threading

from mcpsync import (
    CallToolResult,
    HandlerContext,
    MCPError,
    RequestCancelledError,
    Server,
    TextContent,
)

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

_lock = threading.Lock()
OUTCOMES: dict[str, str] = {}


def _note(label: str, outcome: str) -> None:
    with _lock:
        OUTCOMES[label] = outcome


def make_server() -> Server:
    server = Server("client-task-tests", "1.0.0", request_state_key="client-task-tests")

    @server.tool()
    def plain(text: str = "") -> str:
        """Never a task."""
        return f"plain: {text}"

    @server.tool()
    def report() -> str:
        """What the task tools saw, by label."""
        with _lock:
            return json.dumps(OUTCOMES)

    @server.tool(task="required")
    def slow(ctx: HandlerContext, seconds: float = 0.0, label: str = "") -> str:
        """Sleeps (waking at once when cancelled) and says what happened."""
        _note(label, "started")
        try:
            ctx.sleep(seconds)
            ctx.check_cancelled()
        except RequestCancelledError:
            _note(label, "cancelled")
            raise
        _note(label, "done")
        return f"done: {label}"

    @server.tool(task="optional")
    def maybe(text: str = "") -> str:
        """A task when the client can follow one, else a plain call."""
        return f"maybe: {text}"

    @server.tool(task="optional")
    def tool_error() -> CallToolResult:
        """A tool execution error (a completed task with an isError result)."""
        return CallToolResult(content=[TextContent(text="it broke")], is_error=True)

    @server.tool(task="optional")
    def crash() -> str:
        """A protocol error (a failed task)."""
        raise MCPError("no such widget", code=-32602, data={"widget": 7})

    @server.tool(task="required")
    def ask_name(ctx: HandlerContext) -> str:
        """Elicits a name mid-task."""
        answer = ctx.elicit("Your name?", NAME)
        return f"Hello, {(answer.content or {}).get('name', '?')}!"

    @server.tool(task="required")
    def ask_model(ctx: HandlerContext) -> str:
        """Samples the client's model, then lists its roots, mid-task."""
        reply = ctx.sample("Say hi", max_tokens=5)
        roots = ctx.list_roots()
        return f"{reply.text} ({len(roots)} roots)"

    return server


server = make_server()

if __name__ == "__main__":
    server.run_stdio()
