"""Serve a Server's WSGI app on a real socket (werkzeug's threaded server) for the HTTP
tests. The raw-HTTP helpers are in ``raw.py``."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from werkzeug.serving import make_server

from mcpsync import Server
from tests.server.fixture_server import server as fixture_server

from .raw import WAIT

_ports = itertools.count()


class Served:
    """One running app: its URL (the MCP endpoint), base URL and the app itself."""

    def __init__(self, url: str, base: str, app: Any) -> None:
        self.url = url
        self.base = base
        self.app = app


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """``serve(server, path="/mcp", **options)`` starts ``server.wsgi_app(...)`` on
    127.0.0.1 on a named thread; everything started is shut down and joined at teardown."""
    running: list[tuple[Any, threading.Thread, Any]] = []

    def start(server: Server = fixture_server, path: str | None = "/mcp",
              **options: Any) -> Served:
        app = server.wsgi_app(path=path, **options)
        httpd = make_server("127.0.0.1", 0, app, threaded=True)
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                  name=f"mcpsync-test-httpd-{next(_ports)}", daemon=True)
        thread.start()
        running.append((httpd, thread, app))
        base = f"http://127.0.0.1:{httpd.server_port}"
        return Served(base + (path or "/mcp"), base, app)

    yield start
    for httpd, thread, app in reversed(running):
        httpd.shutdown()
        thread.join(WAIT)
        assert not thread.is_alive(), "the test HTTP server did not stop"
        httpd.server_close()
        app.close()


@pytest.fixture
def served(serve: Callable[..., Served]) -> Served:
    """The fixture server at /mcp, default options."""
    return serve()


@pytest.fixture
def url(served: Served) -> str:
    return served.url


