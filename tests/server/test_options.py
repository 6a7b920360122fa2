"""``Server``'s option objects (``ServerLimits``, ``ProtocolOptions``, ``ServerDetails``,
``TaskOptions``): each sets what the server does, and the flat keywords they replaced are
gone (mcpsync is 0.x: no deprecation period)."""

from __future__ import annotations

import inspect
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

# (the flat keyword that is gone, its value, the keyword now, the option object)
MOVED: list[tuple[str, Any, str, Any]] = [
    ("max_concurrent_handlers", 3, "limits", ServerLimits(max_handlers=3)),
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
        "info": server._info_for(None), "capabilities": server.capabilities(),
        "max_handlers": server.limits.max_handlers,
        "max_subscriptions": server.listeners.max_subscriptions,
        "limits": server.limits, "details": server.details,
        "startup_timeout": server._lifespan.startup_timeout,
        "protocol": server.protocol,
        "tasks": server._task_extension._options,
    }


@pytest.mark.parametrize(("old", "value", "keyword", "options"), MOVED,
                         ids=[row[0] for row in MOVED])
def test_each_option_object_changes_the_server_and_the_flat_keyword_is_gone(
        old, value, keyword, options):
    assert snapshot(Server("s", **{keyword: options})) != snapshot(Server("s"))
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'"):
        Server("s", **{old: value})


def test_the_default_option_objects_are_the_defaults():
    server = Server("s", limits=ServerLimits(), protocol=ProtocolOptions(),
                    details=ServerDetails(), task_options=TaskOptions())
    assert snapshot(server) == snapshot(Server("s"))


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'page_sise'"):
        Server("s", page_sise=2)
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'task_options'"):
        ServerCore("s", task_options=TaskOptions())  # only Server has tasks


def test_the_checks_of_the_options_run():
    with pytest.raises(ValueError, match="both empty"):
        Server("s", protocol=ProtocolOptions(legacy_versions=(), modern_versions=()))
    with pytest.raises(ValueError, match="unknown capabilities"):
        Server("s", protocol=ProtocolOptions(declare=("tools",)))


def test_limits_page_a_list():
    server = Server("s", limits=ServerLimits(page_size=2))
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


def test_the_server_shows_each_option_once():
    # The option objects are the server's own attributes; their fields are not copied
    # onto it as well (one spelling: server.limits.page_size, never server.page_size).
    server = Server("s", limits=ServerLimits(page_size=7),
                    details=ServerDetails(description="Forecasts"))
    assert server.limits.page_size == 7 and server.details.description == "Forecasts"
    for copied in ("max_concurrent_handlers", "max_handlers", "request_timeout", "page_size",
                   "request_state_ttl", "description", "website_url", "icons"):
        assert not hasattr(server, copied), copied


@pytest.mark.parametrize("cls", [ServerLimits, ProtocolOptions, ServerDetails])
def test_option_objects_show_compare_and_hash_as_dataclass_writes_it(cls):
    # Their __init__, __repr__, __eq__ and __hash__ are written without exec (options.py
    # says why); each must do what the one dataclass writes does, checked against a
    # genuine twin.
    import dataclasses

    twin = dataclasses.make_dataclass(
        cls.__name__, [(f.name, f.type, dataclasses.field(
            default=f.default, default_factory=f.default_factory)) for f in
            dataclasses.fields(cls)], frozen=True)
    first = dataclasses.fields(cls)[0]
    changed = {first.name: {int: 7, float: 2.5, tuple: ("2025-11-25",)}.get(
        type(getattr(cls(), first.name)), "text")}
    for kwargs in ({}, changed):
        ours, theirs = cls(**kwargs), twin(**kwargs)
        assert repr(ours) == repr(theirs)
        assert hash(ours) == hash(theirs)
        assert ours == cls(**kwargs)
        assert ours != theirs and (ours == 1) is False
    assert cls() != cls(**changed)
    assert dataclasses.is_dataclass(cls) and dataclasses.replace(cls(), **changed) == cls(
        **changed)
    assert dataclasses.asdict(cls(**changed)) == dataclasses.asdict(twin(**changed))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cls().x = 1
    assert {cls(), cls()} == {cls()}
    # __init__ is written in the class: the same parameters, defaults and refusals.
    assert [(p.name, p.default, p.kind) for p in inspect.signature(cls).parameters.values()] \
        == [(p.name, p.default, p.kind) for p in inspect.signature(twin).parameters.values()]
    values = [getattr(cls(**changed), f.name) for f in dataclasses.fields(cls)]
    assert dataclasses.astuple(cls(*values)) == dataclasses.astuple(twin(*values))
    for args, kwargs in (((), {"nope": 1}), ((*values, 1), {})):
        with pytest.raises(TypeError) as ours_refused:
            cls(*args, **kwargs)
        with pytest.raises(TypeError) as twin_refused:
            twin(*args, **kwargs)
        assert str(ours_refused.value) == str(twin_refused.value)
