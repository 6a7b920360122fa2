"""The task methods' registration: what every server installs at construction.

Why a module of its own: a server registers ``tools/call`` (task-aware) and the
``tasks/*`` methods when it is made, but the surfaces, the runner and the store behind
them are made on first use. Keeping the registration apart from :mod:`.surface` keeps
their imports off a server's start-up (see ``docs/benchmarks.md``, cold start).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext
    from ..server.server import Server


def install(server: Server) -> None:
    """Register ``tools/call`` (task-aware) and the ``tasks/*`` methods on ``server`` as
    built-ins (a user's handler may replace them). The surfaces, runner and store are
    made on first use: a server whose tools never run as tasks never makes them."""
    tools = server.tools

    def call_tool(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is None or getattr(tool, "task", "forbidden") == "forbidden":
            # One lookup: the registry's call is handed the tool found here.
            return tools.call(ctx, params, tool)
        return server.tasks.call_tool(ctx, params)

    server.methods.set_default("tools/call", call_tool)
    for method in ("get", "update", "cancel", "result", "list"):
        server.methods.set_default(f"tasks/{method}", _deferred(server, method))


def _deferred(server: Server, name: str) -> Callable[[HandlerContext, dict[str, Any]],
                                                     dict[str, Any]]:
    def handler(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        method: Callable[[HandlerContext, dict[str, Any]], dict[str, Any]] = getattr(
            server.tasks, name)
        return method(ctx, params)

    return handler
