"""A server with scoped items, for stdio: ``python -m tests.auth.scoped_server``. With
``SCOPED_GRANT`` set, a receive middleware (the host's own auth layer: stdio has no
bearer tokens) grants those space-separated scopes."""

from __future__ import annotations

import os
from typing import Any

from mcpsync import AccessToken, Server
from mcpsync.dispatch.inbound import current_transport


def add_scoped_items(server: Server) -> None:
    """Resources, a template and prompts, some needing ``notes:read`` / ``reports``."""

    @server.resource("notes://public")
    def public() -> str:
        return "for everyone"

    @server.resource("notes://secret", scopes=["notes:read"])
    def secret() -> str:
        return "the secret note"

    @server.resource("notes://private/{name}", scopes=["notes:read"])
    def private(name: str) -> str:
        return f"private note {name}"

    @server.prompt()
    def hello() -> str:
        """Anyone may get it."""
        return "hello"

    @server.prompt(scopes=["reports"])
    def report(quarter: str) -> str:
        """Needs reports."""
        return f"the report of {quarter}"

    @server.completer("report", "quarter")
    def quarters(value: str, context: dict[str, str]) -> list[str]:
        return [q for q in ("Q1", "Q2", "Q3", "Q4") if q.startswith(value)]

    @server.completer("notes://private/{name}", "name")
    def names(value: str, context: dict[str, str]) -> list[str]:
        return [n for n in ("plans", "salaries") if n.startswith(value)]


server = Server("scoped")


@server.tool(scopes=["files:write"])
def write(text: str) -> str:
    """Needs files:write."""
    return "wrote " + text


@server.tool(task="optional", scopes=["files:write"])
def write_later(text: str) -> str:
    """Needs files:write; may run as a task."""
    return "wrote " + text


add_scoped_items(server)


def _grant(message: Any, next_: Any) -> Any:
    transport = current_transport()
    if transport is not None:
        transport.auth = AccessToken("env-user", "stdio",
                                     frozenset(os.environ["SCOPED_GRANT"].split()))
    return next_(message)


if os.environ.get("SCOPED_GRANT"):
    server.recv_middleware.append(_grant)

if __name__ == "__main__":
    server.run_stdio()
