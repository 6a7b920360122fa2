"""Fixtures: a real authorization server and protected MCP endpoints on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import FollowRedirects, OAuth
from tests.server.fixture_server import server as fixture_server

from .authserver import AuthServer, Protected

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never requested: FollowRedirects stops there


@pytest.fixture
def auth_server() -> Iterator[AuthServer]:
    server = AuthServer()
    yield server
    server.stop()


@pytest.fixture
def protect(auth_server: AuthServer) -> Iterator[Callable[..., Protected]]:
    """``protect(**options)``: the fixture MCP server at /mcp behind ``auth_server``."""
    started: list[tuple[Protected, Any]] = []

    def start(auth: AuthServer | None = None, **options: Any) -> Protected:
        app = fixture_server.wsgi_app(path="/mcp")
        protected = Protected(app, auth or auth_server, **options)
        started.append((protected, app))
        return protected

    yield start
    for protected, app in reversed(started):
        protected.stop()
        app.close()


@pytest.fixture
def jwt_auth(auth_server: AuthServer) -> AuthServer:
    """``auth_server`` issuing JWT access tokens from its JWKS."""
    auth_server.jwt_tokens = True
    return auth_server


@pytest.fixture
def protected(jwt_auth: AuthServer) -> Iterator[Callable[..., Any]]:
    """``protected(**options)``: mcpsync protecting itself with ``jwt_auth``'s tokens (a
    ``test_resource_server.SelfProtected``)."""
    from .test_resource_server import SelfProtected

    started: list[SelfProtected] = []

    def start(**options: Any) -> SelfProtected:
        started.append(SelfProtected(jwt_auth, **options))
        return started[-1]

    yield start
    for item in reversed(started):
        item.stop()


def headless(**options: Any) -> OAuth:
    """An interactive-flow OAuth whose 'browser' is requests (the test AS approves)."""
    options.setdefault("redirect_uri", REDIRECT_URI)
    options.setdefault("redirect_handler", FollowRedirects(timeout=10.0))
    return OAuth(**options)
