"""Fixtures serving the framework examples on real sockets (module-scoped)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.interop.conftest import official_python  # noqa: F401  (skips without the peer)
from tests.serving import RunningServer

from .helpers import SERVERS, load_django_application, load_flask_example


def close_mcp_endpoint(wsgi_app: Any) -> None:
    """Close the McpWsgiApp that ``mcpsync.http.mount`` put at /mcp (its handler threads)."""
    wsgi_app.mounts["/mcp"].close()


@pytest.fixture(scope="session")
def flask_app() -> Iterator[Any]:
    """The Flask example's ``app``; its MCP endpoint is closed at the end of the session."""
    app = load_flask_example().app
    yield app
    close_mcp_endpoint(app.wsgi_app)


@pytest.fixture(scope="session")
def django_application() -> Iterator[Any]:
    """The Django example's WSGI application; its MCP endpoint closed at the end."""
    application = load_django_application()
    yield application
    close_mcp_endpoint(application)


@pytest.fixture(scope="module")
def flask_base(flask_app: Any) -> Iterator[str]:
    """Base URL of the Flask example under werkzeug's threaded server."""
    running = RunningServer(flask_app)
    yield running.base
    running.stop()


@pytest.fixture(scope="module", params=sorted(SERVERS))
def django_base(request: pytest.FixtureRequest, django_application: Any) -> Iterator[str]:
    """Base URL of the Django example's WSGI application, under werkzeug and waitress."""
    running = SERVERS[request.param](django_application)
    yield running.base
    running.stop()
