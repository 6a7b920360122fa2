"""2026-07-28 tool headers on the client: which arguments of which tool are mirrored into
``Mcp-Param-*`` headers, learned from ``tools/list``.

A tool whose ``x-mcp-header`` annotations are invalid is dropped from the list the caller
sees (the spec says a client must not call it); the rest have their header map kept here,
keyed by tool name, until the next ``tools/list`` replaces it; at most
:data:`MAX_TOOL_MAPS` (the oldest learned goes first: a server listing without end can not
grow the client). Thread-safe.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from ...protocol.http_headers import valid_tools

#: Tools whose header maps one client keeps, at most.
MAX_TOOL_MAPS: Final = 10_000


class ToolHeaders:
    """Tool name → the argument paths to mirror; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._maps: dict[str, dict[str, tuple[str, ...]]] = {}

    def filter(self, result: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/list`` result without the invalid tools; remembers the valid ones'
        header maps."""
        tools = result.get("tools")
        if not isinstance(tools, list) or not tools:
            return result
        kept, maps = valid_tools([t for t in tools if isinstance(t, dict)])
        with self._lock:
            for tool in kept:
                self._maps.pop(str(tool.get("name")), None)
            self._maps.update(maps)
            for name in list(self._maps)[:max(0, len(self._maps) - MAX_TOOL_MAPS)]:
                del self._maps[name]
        return {**result, "tools": kept}

    def get(self, name: str) -> dict[str, tuple[str, ...]] | None:
        with self._lock:
            return self._maps.get(name)
