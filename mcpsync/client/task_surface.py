"""Which task surface a server speaks, and how a client declares the one it wants.

* **v2**, the extension ``io.modelcontextprotocol/tasks`` (SEP-2663): a client declares it
  among its capabilities' ``extensions``; a server advertises it the same way.
* **v1**, the frozen 2025-11-25 surface: a server declares task-augmented ``tools/call``
  (``capabilities.tasks.requests.tools.call``), in the handshake era only.

Here, apart from :mod:`.tasks`, because the handshake (:mod:`.negotiate`) needs it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

#: The extension id a v2 client declares and a v2 server advertises.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

Surface = Literal["v1", "v2"]


def surface_of(capabilities: Mapping[str, Any], modern: bool) -> Surface | None:
    """Which task surface a server with ``capabilities`` speaks: ``"v2"`` when it advertises
    the extension, ``"v1"`` when it declares task-augmented ``tools/call`` (2025-11-25's
    ``capabilities.tasks.requests.tools.call``, handshake era only), else ``None``."""
    extensions = capabilities.get("extensions")
    if isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict):
        return "v2"
    tasks = capabilities.get("tasks")
    if not modern and isinstance(tasks, dict):
        requests = tasks.get("requests")
        tools = requests.get("tools") if isinstance(requests, dict) else None
        if isinstance(tools, dict) and isinstance(tools.get("call"), dict):
            return "v1"
    return None


def with_extension(capabilities: dict[str, Any]) -> dict[str, Any]:
    """``capabilities`` plus the tasks extension (a copy; other extensions are kept)."""
    extensions = capabilities.get("extensions")
    merged = dict(extensions) if isinstance(extensions, dict) else {}
    merged.setdefault(TASKS_EXTENSION, {})
    return {**capabilities, "extensions": merged}
