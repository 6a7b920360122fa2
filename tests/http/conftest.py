"""Serve a Server's WSGI app on a real socket (werkzeug's threaded server) for the HTTP
tests. The raw-HTTP helpers are in ``raw.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import Server
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer


class Served:
    """One running app: its URL (the MCP endpoint), base URL and the app itself."""

    def __init__(self, url: str, base: str, app: Any) -> None:
        self.url = url
        self.base = base
        self.app = app


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """``serve(server, path="/mcp", **options)`` starts ``server.wsgi_app(...)`` on
    127.0.0.1 on a named thread (``tests.serving.RunningServer``); everything started is
    shut down and joined at teardown."""
    running: list[RunningServer] = []

    def start(server: Server = fixture_server, path: str | None = "/mcp",
              **options: Any) -> Served:
        app = server.wsgi_app(path=path, **options)
        httpd = RunningServer(app, on_stop=app.close, quiet=False)
        running.append(httpd)
        return Served(httpd.base + (path or "/mcp"), httpd.base, app)

    yield start
    for httpd in reversed(running):
        httpd.stop()


@pytest.fixture
def served(serve: Callable[..., Served]) -> Served:
    """The fixture server at /mcp, default options."""
    return serve()


@pytest.fixture
def url(served: Served) -> str:
    return served.url


