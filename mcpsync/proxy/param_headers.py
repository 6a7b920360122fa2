"""The ``Mcp-Param-*`` headers of a proxied tool, checked as for a server's own tools.

A proxy lists its remote's tools as they are, ``x-mcp-header`` annotations included, so a
2026-07-28 caller over HTTP mirrors those arguments into headers, and intermediaries route
on them. The HTTP layer checks the headers of a tool some registry holds; a proxied tool
is in none, and the remote can not check them either (the proxy's client sends headers
computed from the arguments, not the caller's). So the proxy checks them itself, before
forwarding: a forged or missing header is -32020 (HeaderMismatch, HTTP 400), as for its
own tools and a mounted server's.

The header map of each remote tool is learned from the remote's ``tools/list``: from each
page the proxy forwards, and, for a tool called before this process forwarded a page that
names it (another worker served the list), from a listing the proxy makes itself. That
listing is made once at a time, at most once per :data:`RELIST_AFTER` seconds for names it
does not list (so calls of unknown names can not make the proxy list the remote again and
again), and read within :data:`MAX_TOOLS` tools and ``MAX_PAGES`` pages. A list change of
the remote forgets what was learned. At most :data:`MAX_TOOLS` maps are kept.

The same listings tell which remote tools are for an MCP Apps view alone (``_meta.ui
.visibility`` without ``"model"``): a proxy that declared the extension keeps those from
callers that did not (:meth:`RemoteParamHeaders.app_only`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Final

from ..dispatch.context import HandlerContext
from ..errors import HEADER_MISMATCH, INTERNAL_ERROR, MCPError, MCPSyncError
from ..protocol.deadline import Deadline
from ..protocol.http_headers import header_params, param_mismatch
from ..protocol.ui_meta import model_visible
from .call_table import is_modern

#: Remote tools whose header maps a proxy keeps, at most (and reads in one listing).
MAX_TOOLS: Final = 10_000
#: Pages of the remote's ``tools/list`` one listing reads, at most.
MAX_PAGES: Final = 100
#: Seconds a complete listing answers for names it does not hold, before another is made.
RELIST_AFTER: Final = 30.0

Map = dict[str, tuple[str, ...]]
#: Lists every tool of the remote (a walk of its pages), as ``tools/list`` items.
Lister = Callable[[], list[Any]]


class RemoteParamHeaders:
    """The header maps of a remote's tools, by the remote's name; see the module.
    Thread-safe; no lock is held while the remote is listed."""

    def __init__(self, limit: int = MAX_TOOLS, relist_after: float = RELIST_AFTER) -> None:
        self._limit = limit
        self._relist_after = relist_after
        self._lock = threading.Lock()
        #: name -> its map ({}: no annotation; None: annotations invalid, nothing checked).
        self._maps: dict[str, Map | None] = {}
        #: The names among them of the tools for a view alone (MCP Apps).
        self._app_only: frozenset[str] = frozenset()
        #: When the last complete listing was recorded (monotonic; None: none since the
        #: last list change).
        self._listed_at: float | None = None
        #: Set when the listing in progress is over (None: none in progress).
        self._listing: threading.Event | None = None

    def record(self, tools: Any) -> None:
        """Learn the maps of the tools of one ``tools/list`` page."""
        found = _maps_of(tools)
        app_only = _app_only(tools)
        with self._lock:
            for name, value in found.items():
                if name in self._maps or len(self._maps) < self._limit:
                    self._maps[name] = value
            kept = frozenset(n for n in app_only if n in self._maps)
            self._app_only = (self._app_only - frozenset(found)) | kept

    def knows(self, name: str) -> bool:
        """Whether the remote listed a tool ``name`` (as far as this proxy has seen)."""
        return name in self._maps

    def forget(self) -> None:
        """The remote's tools changed: what was learned may be wrong now."""
        with self._lock:
            self._maps.clear()
            self._app_only = frozenset()
            self._listed_at = None

    def lookup(self, name: str, list_all: Lister, wait: float) -> Map | None:
        """The map of remote tool ``name`` (None: nothing to check), listing the remote
        with ``list_all`` first when ``name`` is not known and no recent listing says it
        does not exist. ``wait``: the longest to wait for another thread's listing."""
        with self._lock:
            if name in self._maps:
                return self._maps[name]
            listed_at = self._listed_at
            if listed_at is not None and time.monotonic() - listed_at < self._relist_after:
                return None  # the remote had no such tool a moment ago
            other = self._listing
            mine = None
            if other is None:
                mine = self._listing = threading.Event()
        if other is not None:
            other.wait(wait)
        else:
            assert mine is not None
            try:
                listed = list_all()[:self._limit]
                found, app_only = _maps_of(listed), _app_only(listed)
                with self._lock:
                    self._maps, self._listed_at = found, time.monotonic()
                    self._app_only = app_only
            finally:
                with self._lock:
                    self._listing = None
                mine.set()
        with self._lock:
            return self._maps.get(name)

    def app_only(self, name: str, list_all: Lister, wait: float) -> bool:
        """Whether remote tool ``name`` is for an MCP Apps view alone, listing the remote
        first as :meth:`lookup` does. Fails closed: a remote whose tools can not be listed
        is -32603, and the call is not forwarded."""
        try:
            self.lookup(name, list_all, wait)
        except (MCPSyncError, TimeoutError):
            raise MCPError("the proxied server's tools could not be listed",
                           code=INTERNAL_ERROR) from None
        return name in self._app_only

    def check(self, ctx: HandlerContext, params: dict[str, Any], list_all: Lister,
              wait: float) -> None:
        """Refuse a 2026-07-28 HTTP ``tools/call`` whose ``Mcp-Param-*`` headers disagree
        with its arguments (-32020), as the HTTP layer does for a registered tool."""
        if ctx.transport.kind != "http" or not is_modern(ctx):
            return
        name = params.get("name")
        if not isinstance(name, str):
            return
        try:
            found = self.lookup(name, list_all, wait)
        except (MCPSyncError, TimeoutError):
            # Fail closed: a call whose headers can not be checked is not forwarded.
            raise MCPError("the proxied server's tools could not be listed",
                           code=INTERNAL_ERROR) from None
        if not found:
            return
        problem = param_mismatch(ctx.transport.headers, params.get("arguments"), found)
        if problem is not None:
            raise MCPError(f"Header mismatch: {problem}", code=HEADER_MISMATCH)


def _maps_of(tools: Any) -> dict[str, Map | None]:
    """The header map of each tool of a ``tools/list`` page, by name."""
    found: dict[str, Map | None] = {}
    for tool in tools if isinstance(tools, list) else ():
        name = tool.get("name") if isinstance(tool, dict) else None
        if isinstance(name, str):
            schema = tool.get("inputSchema")
            found[name] = header_params(schema) if isinstance(schema, dict) else {}
    return found


def _app_only(tools: Any) -> frozenset[str]:
    """The names of a ``tools/list`` page's tools that a model may not see (MCP Apps)."""
    return frozenset(t["name"] for t in (tools if isinstance(tools, list) else ())
                     if isinstance(t, dict) and isinstance(t.get("name"), str)
                     and not model_visible(t))


def lister(request: Callable[[dict[str, Any], float], dict[str, Any]],
           budget: float) -> Lister:
    """``list_all`` for :meth:`RemoteParamHeaders.lookup`: ``request(params, timeout)``
    answers one ``tools/list`` page; every page within ``budget`` seconds in all, at most
    ``MAX_PAGES`` pages and ``MAX_TOOLS`` tools."""

    def list_all() -> list[Any]:
        deadline = Deadline(budget, "listing the proxied server's tools")
        tools: list[Any] = []
        params: dict[str, Any] = {}
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            deadline.check()
            page = request(params, deadline.remaining())
            items = page.get("tools")
            if isinstance(items, list):
                tools.extend(items[:MAX_TOOLS - len(tools)])
            cursor = page.get("nextCursor")
            if len(tools) >= MAX_TOOLS or not isinstance(cursor, str) or cursor in seen:
                break
            seen.add(cursor)
            params = {"cursor": cursor}
        return tools

    return list_all
