"""What a ``Server`` shows is what a user calls or configures (docs/server.md, "What a
``Server`` shows"): the names are pinned here, so that a new public name is a choice made
in this file and in that section, not an attribute that leaked. The machinery the
package's own layers share with the server (transports, the HTTP app, mounts, proxies,
the tasks extension) is under underscore names."""

from __future__ import annotations

import re
from pathlib import Path

from mcpsync import Server
from mcpsync.server.server import ServerCore

#: The public surface of ``mcpsync.Server``, by purpose (the table of docs/server.md).
SURFACE: dict[str, frozenset[str]] = {
    "who it is": frozenset({"name", "version", "title", "instructions", "details",
                            "capabilities"}),
    "configuration": frozenset({"limits", "protocol", "task_store", "send_middleware",
                                "recv_middleware"}),
    "registering": frozenset({"tool", "add_tool", "remove_tool", "tools", "resource",
                              "resources", "prompt", "prompts", "completer",
                              "method_handler", "notification_handler", "request_scope",
                              "add_middleware", "disable", "enable", "mount"}),
    "making one from elsewhere": frozenset({"proxy", "from_openapi", "from_wsgi"}),
    "serving": frozenset({"run_stdio", "run_http", "wsgi_app", "connect", "sessions"}),
    "telling clients": frozenset({"notify_list_changed", "notify_resource_updated",
                                  "subscribers", "listeners", "end_subscriptions",
                                  "relay_events"}),
    "lifecycle": frozenset({"on_startup", "on_shutdown", "start", "stop", "state",
                            "close_tasks"}),
    "the extension seam": frozenset({"use", "methods", "wrap_method", "declare_options"}),
}
PUBLIC = frozenset().union(*SURFACE.values())
#: What ``mcpsync.Server`` adds to the core (``facade.py``): tasks, HTTP, routes as tools.
FACADE = frozenset({"task_store", "close_tasks", "wsgi_app", "run_http", "from_openapi",
                    "from_wsgi"})

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def test_a_server_shows_exactly_the_documented_surface() -> None:
    shown = public(Server("x"))
    assert shown == PUBLIC, (f"new public names: {sorted(shown - PUBLIC)}; "
                             f"gone: {sorted(PUBLIC - shown)}")
    assert len(PUBLIC) == sum(len(names) for names in SURFACE.values()) == 51


def test_the_core_shows_the_same_less_what_the_facade_adds() -> None:
    assert public(ServerCore("x")) == PUBLIC - FACADE


def test_a_proxy_and_a_started_server_show_no_more() -> None:
    # Serving, mounting and proxying set their state on private names only.
    server = Server("x")
    server.mount(Server("child"), "child")
    server.start()
    try:
        assert public(server) == PUBLIC
        assert public(Server.proxy(Server("remote"))) == PUBLIC
    finally:
        server.stop()


def test_the_docs_table_lists_the_same_names_by_the_same_purposes() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### What a `Server` shows", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 2 and cells[0] in SURFACE:
            names = re.findall(r"`(?:Server\.)?([a-z_]+)(?:\(\))?`", cells[1])
            rows[cells[0]] = frozenset(names)
    assert rows == SURFACE
    assert f": {len(PUBLIC)} names" in section
