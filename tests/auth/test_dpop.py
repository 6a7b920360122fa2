"""DPoP (RFC 9449): tokens bound to the client's key, a fresh proof per request, and the
nonces of the token endpoint and the MCP server, against the real test servers."""

from __future__ import annotations

from typing import Any

from mcpsync import Client, MemoryTokenStorage

from .authserver import AuthServer
from .conftest import headless


def test_dpop_bound_token_with_a_fresh_proof_per_request(auth_server: AuthServer,
                                                         protect: Any):
    auth_server.dpop = True
    mcp = protect()
    storage = MemoryTokenStorage()
    with Client.http(mcp.url, auth=headless(storage=storage),
                     protocol_version="2026-07-28") as client:
        client.list_tools()
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    [token] = auth_server.requests_to("/token")
    assert "dpop" in {name.lower() for name in token.headers}
    assert len(mcp.jtis) >= 2          # every request proved possession, never the same jti
    record = storage.load(mcp.url.rsplit("/", 1)[0])
    assert record is not None and record["token"] is None  # useless without the key


def test_nonces_of_the_token_endpoint_and_the_server_are_used(auth_server: AuthServer,
                                                              protect: Any):
    auth_server.dpop = True
    auth_server.dpop_nonce = "as-nonce-1"
    mcp = protect()
    mcp.dpop_nonce = "rs-nonce-1"
    with Client.http(mcp.url, auth=headless(), protocol_version="2026-07-28") as client:
        assert client.list_tools()
    assert auth_server.count("/token") == 2     # once without the nonce, once with it
    assert auth_server.count("/authorize") == 1


def test_dpop_can_be_turned_off(auth_server: AuthServer, protect: Any):
    auth_server.dpop = True
    mcp = protect()
    with Client.http(mcp.url, auth=headless(dpop=False),
                     protocol_version="2026-07-28") as client:
        assert client.list_tools()
    [token] = auth_server.requests_to("/token")
    assert "dpop" not in {name.lower() for name in token.headers} and not mcp.jtis
