"""``McpWsgiApp``'s options as one frozen object (``WsgiOptions``, grouped in ``Timing``,
``SessionLimits`` and ``Stores``), with the flat keywords of ``server.wsgi_app(...)``
still working on top of it: no constructor takes more than a dozen parameters."""

from __future__ import annotations

import dataclasses
import inspect
import json

import pytest
import requests

from mcpsync import Server
from mcpsync.http import (
    InMemoryEventStore,
    InProcessBus,
    McpWsgiApp,
    MemorySessionStore,
    SessionLimits,
    Stores,
    Timing,
    WsgiOptions,
)
from tests.serving import RunningServer

from .raw import WAIT, modern_headers, modern_request


def test_no_constructor_takes_more_than_a_dozen_parameters() -> None:
    for made in (McpWsgiApp, WsgiOptions, Timing, SessionLimits, Stores):
        named = [p for p in inspect.signature(made).parameters.values()
                 if p.kind is not inspect.Parameter.VAR_KEYWORD]
        assert len(named) <= 12, (made.__name__, [p.name for p in named])


def test_the_flat_keywords_land_in_their_groups() -> None:
    server = Server("options")
    store, sessions = InMemoryEventStore(), MemorySessionStore()
    bus = InProcessBus()
    app = server.wsgi_app(path="/x/", json_window=0.25, keepalive_interval=3.0, retry_ms=7,
                          session_idle_timeout=60.0, session_handshake_timeout=2.0,
                          max_sessions=5, max_sessions_per_principal=2,
                          max_sessions_per_address=3, event_store=store,
                          session_store=sessions, bus=bus, store_budget=4.0,
                          legacy_sessions=True, sse_path=None, messages_path="/m",
                          max_body_bytes=1000)
    try:
        options = app.options
        assert options.timing == Timing(0.25, 3.0, 7)
        assert options.sessions == SessionLimits(60.0, 2.0, 5, 2, 3)
        assert options.stores == Stores(store, sessions, bus, 4.0)
        assert (options.path, options.sse_path, options.messages_path,
                options.max_body_bytes) == ("/x/", None, "/m", 1000)
        # The attributes the app always had keep their meaning.
        assert (app.path, app.json_window, app.keepalive_interval, app.retry_ms,
                app.store, app.store_budget, app.max_body_bytes) == (
                    "/x", 0.25, 3.0, 7, store, 4.0, 1000)
        assert app.relay is not None
    finally:
        app.close()
        bus.close()


def test_keywords_apply_on_top_of_an_options_object() -> None:
    shared = WsgiOptions(path="/mcp", timing=Timing(json_window=0.1),
                         sessions=SessionLimits(max_sessions=9))
    app = Server("options").wsgi_app(options=shared, max_sessions=3, retry_ms=20)
    try:
        assert app.options.timing == Timing(json_window=0.1, retry_ms=20)
        assert app.options.sessions == SessionLimits(max_sessions=3)
        assert app.options.path == "/mcp"
        assert shared.sessions.max_sessions == 9  # frozen, untouched
        with pytest.raises(dataclasses.FrozenInstanceError):
            shared.path = "/other"  # type: ignore[misc]
    finally:
        app.close()


def test_event_store_default_none_and_given() -> None:
    apps = [Server("a").wsgi_app(), Server("b").wsgi_app(event_store=None),
            McpWsgiApp(Server("c"), WsgiOptions(stores=Stores(event_store=None)))]
    try:
        assert isinstance(apps[0].store, InMemoryEventStore)
        assert apps[1].store is None and apps[2].store is None
        other = Server("d").wsgi_app()
        try:
            assert other.store is not apps[0].store  # one fresh store per app
        finally:
            other.close()
    finally:
        for app in apps:
            app.close()


def test_unknown_keywords_are_refused() -> None:
    with pytest.raises(TypeError):
        McpWsgiApp(Server("e"), json_windw=1.0)  # type: ignore[call-arg]


def test_an_app_built_from_options_serves() -> None:
    server = Server("served")

    @server.tool()
    def hello() -> str:
        return "hi"

    app = McpWsgiApp(server, WsgiOptions(path="/custom"))
    with RunningServer(app, on_stop=app.close) as running:
        def post(path: str) -> requests.Response:
            return requests.post(running.base + path,
                                 data=json.dumps(modern_request("tools/list")),
                                 headers=modern_headers("tools/list"), timeout=WAIT)

        response = post("/custom")
        assert response.status_code == 200, response.text
        assert [t["name"] for t in response.json()["result"]["tools"]] == ["hello"]
        assert post("/mcp").status_code == 404


def test_server_wsgi_app_takes_what_the_app_takes() -> None:
    # The same parameters, annotated the same way: a misspelt keyword of wsgi_app is a
    # type checker's error as it is McpWsgiApp's (it once took **options: Any).
    app_params = list(inspect.signature(McpWsgiApp.__init__).parameters.values())[2:]
    facade_params = list(inspect.signature(Server.wsgi_app).parameters.values())[1:]
    assert [(p.name, p.kind, p.default, str(p.annotation)) for p in facade_params] == [
        (p.name, p.kind, p.default, str(p.annotation)) for p in app_params]
    assert inspect.signature(Server.wsgi_app).return_annotation == "McpWsgiApp"
    app = Server("typed").wsgi_app(WsgiOptions(path="/typed"))  # options positionally
    try:
        assert isinstance(app, McpWsgiApp) and app.path == "/typed"
        with pytest.raises(TypeError):
            Server("typed").wsgi_app(json_windw=1.0)  # type: ignore[call-arg]
    finally:
        app.close()
