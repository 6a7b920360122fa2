"""Local failures of the HTTP client are TransportErrors, never MCPErrors: a refused
connection fails like a dead stdio server does (ConnectionClosedError), so ``except
MCPError`` can not mistake a dead server for a refusal."""

from __future__ import annotations

import sys

import pytest

from mcpsync import (
    Client,
    ConnectionClosedError,
    MCPError,
    RequestTimeoutError,
    TransportError,
    TransportTimeoutError,
)
from tests.helpers import WAIT
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer, free_port


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25", "auto"])
def test_a_refused_connection_is_connection_closed(version):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ConnectionClosedError) as caught:
        Client.http(url, protocol_version=version, timeout=WAIT)
    assert not isinstance(caught.value, MCPError)
    assert isinstance(caught.value, TransportError)
    assert isinstance(caught.value, OSError)


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_a_server_that_went_away_fails_the_call_like_stdio(version):
    running = RunningServer(fixture_server.wsgi_app(path="/mcp"))
    try:
        client = Client.http(running.base + "/mcp", protocol_version=version, timeout=WAIT)
    finally:
        running.stop()
    with client:
        with pytest.raises(ConnectionClosedError) as caught:
            client.call_tool("echo", {"text": "x"})
        assert not isinstance(caught.value, MCPError)


def test_stdio_fails_the_same_way():
    command = [sys.executable, "-c", "import sys; sys.stdin.readline()"]
    with pytest.raises(ConnectionClosedError):
        Client.stdio(command, timeout=WAIT)


def test_the_tree_keeps_old_catches_working():
    # Code written against the old tree still catches what it caught.
    assert issubclass(ConnectionClosedError, ConnectionError)
    assert issubclass(RequestTimeoutError, TimeoutError)
    assert issubclass(TransportTimeoutError, TimeoutError)
    assert issubclass(ConnectionClosedError, TransportError)
    assert not issubclass(TransportError, MCPError)
