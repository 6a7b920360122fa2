"""A scripted 2026-07-28 server on a raw memory transport: for answers a real Server never
gives (several questions in one round, cache hints on a retry). The public
:class:`mcpsync.testing.ScriptedServer`, with every request checked against the spec's
schema."""

from __future__ import annotations

from typing import Any

from mcpsync.testing import Script, ScriptedServer
from tests.spec import validate_message

MODERN = "2026-07-28"

__all__ = ["MODERN", "Script", "Scripted"]


class Scripted(ScriptedServer):
    """Answers each request with ``script(method, params)``; records what arrived; fails
    a request that the 2026-07-28 schema does not accept."""

    def __init__(self, script: Script, *, capabilities: dict[str, Any] | None = None) -> None:
        super().__init__(script, capabilities=capabilities,
                         check=lambda wire: validate_message(MODERN, wire))
