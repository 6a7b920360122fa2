"""A client error never quotes a credential that the endpoint URL carries: the message
of a refused connection or an HTTP refusal names the endpoint with the value redacted."""

from __future__ import annotations

import socket

import pytest

from mcpsync import Client
from mcpsync.errors import MCPSyncError
from mcpsync.protocol.redact import REDACTED
from tests.transports.hostile import RawHttpServer, RawRequest

SECRET = "s3cr3t-value-123"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_does_not_quote_the_key() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp?api_key={SECRET}"
    with pytest.raises(MCPSyncError) as caught:
        Client.http(url, timeout=5).close()
    assert SECRET not in str(caught.value)


def test_an_http_refusal_does_not_quote_the_key() -> None:
    def refuse(request: RawRequest) -> None:
        request.send_body(b"go away", status=500, content_type="text/plain")

    with RawHttpServer(refuse) as server, pytest.raises(MCPSyncError) as caught:
        Client.http(f"{server.url}?api_key={SECRET}", timeout=5).close()
    assert SECRET not in str(caught.value) and REDACTED in str(caught.value)
