"""A server with a scoped tool, for stdio: ``python -m tests.auth.scoped_server``. With
``SCOPED_GRANT`` set, a receive middleware (the host's own auth layer: stdio has no
bearer tokens) grants those space-separated scopes."""

from __future__ import annotations

import os
from typing import Any

from mcpsync import AccessToken, Server
from mcpsync.dispatch.transport import current_transport

server = Server("scoped")


@server.tool(scopes=["files:write"])
def write(text: str) -> str:
    """Needs files:write."""
    return "wrote " + text


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
