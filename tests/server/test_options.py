"""``Server``'s option objects (``ServerLimits``, ``ProtocolOptions``, ``ServerDetails``,
``TaskOptions``) and the flat keywords they replaced: each old keyword still works, warns
with the new spelling, and makes the same server as the new spelling."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import pytest

from mcpsync import (
    Client,
    Icon,
    ProtocolOptions,
    Server,
    ServerDetails,
    ServerLimits,
    TaskOptions,
)
from mcpsync.server.server import ServerCore

ICONS = [Icon("https://example.org/icon.png")]

# (old keyword, its value, the new keyword, the option object that holds it)
MOVED: list[tuple[str, Any, str, Any]] = [
    ("max_concurrent_handlers", 3, "limits", ServerLimits(max_concurrent_handlers=3)),
    ("max_subscriptions", 0, "limits", ServerLimits(max_subscriptions=0)),
    ("request_timeout", 2.5, "limits", ServerLimits(request_timeout=2.5)),
    ("page_size", 2, "limits", ServerLimits(page_size=2)),
    ("request_state_ttl", 9.0, "limits", ServerLimits(request_state_ttl=9.0)),
    ("startup_timeout", 4.0, "limits", ServerLimits(startup_timeout=4.0)),
    ("legacy_versions", ("2025-06-18",), "protocol",
     ProtocolOptions(legacy_versions=("2025-06-18",))),
    ("modern_versions", (), "protocol", ProtocolOptions(modern_versions=())),
    ("declare", ("prompts",), "protocol", ProtocolOptions(declare=("prompts",))),
    ("cache_ttl_ms", 500, "protocol", ProtocolOptions(cache_ttl_ms=500)),
    ("cache_scope", "private", "protocol", ProtocolOptions(cache_scope="private")),
    ("description", "Forecasts", "details", ServerDetails(description="Forecasts")),
    ("website_url", "https://example.org", "details",
     ServerDetails(website_url="https://example.org")),
    ("icons", ICONS, "details", ServerDetails(icons=ICONS)),
    ("max_running_tasks", 5, "task_options", TaskOptions(max_running=5)),
    ("task_ttl_ms", 60_000, "task_options", TaskOptions(ttl_ms=60_000)),
    ("task_poll_interval_ms", 250, "task_options", TaskOptions(poll_interval_ms=250)),
]


def snapshot(server: Server) -> dict[str, Any]:
    """Everything the options set on a server, as the rest of the code reads it."""
    return {
        "info": server.info_for(None), "capabilities": server.capabilities(),
        "max_concurrent_handlers": server.max_concurrent_handlers,
        "max_subscriptions": server.listeners.max_subscriptions,
        "request_timeout": server.request_timeout, "page_size": server.page_size,
        "request_state_ttl": server.request_state_ttl,
        "startup_timeout": server._lifespan.startup_timeout,
        "versions": (server.legacy_versions, server.modern_versions),
        "cache": (server.cache_ttl_ms, server.cache_scope), "declare": server.declare,
        "tasks": server._task_extension._options,
    }


@pytest.mark.parametrize(("old", "value", "keyword", "options"), MOVED,
                         ids=[row[0] for row in MOVED])
def test_an_old_keyword_warns_and_makes_the_same_server(old, value, keyword, options):
    new = Server("s", **{keyword: options})
    with pytest.warns(DeprecationWarning, match=rf"Server\({old}=\.\.\.\) is deprecated: "
                      rf"pass Server\({keyword}={type(options).__name__}\(") as caught:
        flat = Server("s", **{old: value})
    assert snapshot(flat) == snapshot(new) != snapshot(Server("s"))
    assert caught[0].filename == __file__  # the user's line, not mcpsync's


def test_the_new_spelling_does_not_warn_and_the_defaults_are_the_old_ones():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        server = Server("s", limits=ServerLimits(), protocol=ProtocolOptions(),
                        details=ServerDetails(), task_options=TaskOptions())
    assert snapshot(server) == snapshot(Server("s"))


def test_an_old_keyword_beside_its_option_object_wins():
    with pytest.warns(DeprecationWarning):
        server = Server("s", limits=ServerLimits(page_size=7, request_timeout=3.0),
                        page_size=9)
    assert (server.page_size, server.request_timeout) == (9, 3.0)


def test_an_unknown_keyword_is_still_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'page_sise'"):
        Server("s", page_sise=2)
    with pytest.raises(TypeError, match=r"ServerCore\(\) got an unexpected keyword"):
        ServerCore("s", max_running_tasks=2)  # a task option: only Server has tasks


def test_the_checks_of_the_options_still_run_either_way():
    with pytest.raises(ValueError, match="both empty"):
        Server("s", protocol=ProtocolOptions(legacy_versions=(), modern_versions=()))
    with pytest.raises(ValueError, match="unknown capabilities"), pytest.warns(
            DeprecationWarning):
        Server("s", declare=("tools",))


@pytest.mark.parametrize("spelling", ["old", "new"])
def test_both_spellings_page_a_list_the_same(spelling):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        server = (Server("s", page_size=2) if spelling == "old"
                  else Server("s", limits=ServerLimits(page_size=2)))
    for n in range(5):
        server.add_tool(lambda: "x", name=f"t{n}")
    with Client.memory(server) as client:
        first = client.request("tools/list", {})
    assert len(first["tools"]) == 2 and "nextCursor" in first


def test_server_stays_within_a_dozen_parameters():
    for cls in (Server, ServerCore):
        named = [p for p in inspect.signature(cls.__init__).parameters.values()
                 if p.kind is not p.VAR_KEYWORD and p.name != "self"]
        assert len(named) <= 13, (cls.__name__, [p.name for p in named])
