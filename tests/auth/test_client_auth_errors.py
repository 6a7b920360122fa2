"""A client given a static bearer token (``Client.http(url, headers=...)``, no ``OAuth``)
that a real resource server refuses (issue 28): the 401 raises :class:`UnauthorizedError`
and the 403 :class:`InsufficientScopeError` naming the scopes the server's
``WWW-Authenticate`` asks for, both :class:`AuthorizationError` (and still the
``InvalidRequestError`` the server's JSON-RPC body says, as before), in both eras.

The resource server is mcpsync's own (``test_resource_server.SelfProtected``: RS256 JWTs
from the loopback authorization server's JWKS) on a real socket.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcpsync import (
    AuthorizationError,
    Client,
    InsufficientScopeError,
    InvalidRequestError,
    OAuthLimits,
    UnauthorizedError,
)
from tests.helpers import require_module

from .authserver import AuthServer, Issued
from .conftest import headless
from .test_resource_server import bearer

require_module("jwt")

ERAS = ["2025-11-25", "2026-07-28"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", ERAS)
def test_a_refused_token_is_unauthorized(protected: Any, version: str):
    mcp = protected(required_scopes=["mcp"])
    with pytest.raises(UnauthorizedError) as info:
        Client.http(mcp.url, headers=bearer("not-a-token"), protocol_version=version,
                    timeout=30)
    error = info.value
    assert isinstance(error, AuthorizationError)
    assert isinstance(error, InvalidRequestError)  # what it was before: except clauses hold
    assert error.status == 401
    assert error.www_authenticate is not None
    assert 'error="invalid_token"' in error.www_authenticate
    assert f'resource_metadata="{mcp.prm_url}"' in error.www_authenticate
    assert error.scopes == ["mcp"]  # what every request needs, as the challenge says
    assert "401" in str(error) and mcp.url in str(error)


@pytest.mark.parametrize("version", ERAS)
def test_no_token_at_all_is_unauthorized(protected: Any, version: str):
    mcp = protected()
    with pytest.raises(UnauthorizedError) as info:
        Client.http(mcp.url, protocol_version=version, timeout=30)
    assert info.value.www_authenticate == f'Bearer resource_metadata="{mcp.prm_url}"'
    assert info.value.scopes == []


@pytest.mark.parametrize("version", ERAS)
def test_a_missing_scope_is_insufficient_scope_naming_it(protected: Any,
                                                         jwt_auth: AuthServer, version: str):
    mcp = protected()
    token = jwt_auth.mint(audience=mcp.url, scopes=["mcp"])
    with Client.http(mcp.url, headers=bearer(token), protocol_version=version,
                     timeout=30) as client:
        assert client.protocol_version == version
        with pytest.raises(InsufficientScopeError) as info:
            client.call_tool("write", {"text": "x"})
        error = info.value
        assert isinstance(error, AuthorizationError)
        assert isinstance(error, InvalidRequestError)
        assert error.status == 403
        assert error.scopes == ["files:write"]
        assert error.www_authenticate == ('Bearer error="insufficient_scope", '
                                          f'scope="files:write", '
                                          f'resource_metadata="{mcp.prm_url}"')
        assert "files:write" in str(error)
        # The refusal was the call's alone: the connection still works.
        assert "whoami" in [tool.name for tool in client.list_tools()]


@pytest.mark.parametrize("version", ERAS)
def test_a_token_without_the_scope_every_request_needs(protected: Any,
                                                        jwt_auth: AuthServer, version: str):
    mcp = protected(required_scopes=["mcp", "files:write"])
    token = jwt_auth.mint(audience=mcp.url, scopes=["mcp"])
    with pytest.raises(InsufficientScopeError) as info:
        Client.http(mcp.url, headers=bearer(token), protocol_version=version, timeout=30)
    assert info.value.scopes == ["mcp", "files:write"]


def test_the_oauth_step_up_that_never_gets_the_scope_names_it(protected: Any,
                                                              jwt_auth: AuthServer):
    """The same class from the OAuth flow, when step-up authorizations run out: it names
    the scopes too (it named none before)."""
    mcp = protected()
    original = jwt_auth.mint

    def stingy(**kw: Any) -> str:  # the authorization server drops files:write
        kw["scopes"] = [s for s in kw.get("scopes") or [] if s != "files:write"]
        return original(**kw)

    jwt_auth.mint = stingy  # type: ignore[method-assign]
    with Client.http(mcp.url, auth=headless(), protocol_version="2026-07-28",
                     timeout=30.0) as client, pytest.raises(InsufficientScopeError) as info:
        client.call_tool("write", {"text": "z"})
    assert info.value.status == 403
    assert info.value.scopes == ["files:write"]
    assert info.value.www_authenticate is not None
    assert 'error="insufficient_scope"' in info.value.www_authenticate


@pytest.mark.parametrize("kind", ["memory", "stdio"])
@pytest.mark.parametrize("version", ERAS)
def test_off_http_a_missing_scope_is_the_same_class(kind: str, version: str):
    """Over stdio or memory the host's own auth layer decides, and the server answers
    -32600 naming the scope: the client raises the InsufficientScopeError it raises for
    the 403 over HTTP, so ``except InsufficientScopeError`` holds on every transport."""
    from .scoped_server import server

    if kind == "memory":
        connect = Client.memory(server, protocol_version=version, timeout=30)
    else:
        connect = Client.stdio([sys.executable, "-m", "tests.auth.scoped_server"], cwd=ROOT,
                               env={"SCOPED_GRANT": "notes:read"}, protocol_version=version,
                               timeout=30)
    with connect as client:
        with pytest.raises(InsufficientScopeError) as info:
            client.call_tool("write", {"text": "x"})
        assert info.value.scopes == ["files:write"]
        assert info.value.status is None and info.value.www_authenticate is None
        assert info.value.data == {"error": "insufficient_scope", "scope": "files:write"}


@pytest.mark.parametrize("version", ERAS)
def test_a_resource_server_in_front_of_the_mcp_server(protect: Any, auth_server: AuthServer,
                                                      version: str):
    """A gateway that is not mcpsync (``authserver.Protected``): its refusals carry a
    challenge and an OAuth error body, no JSON-RPC error; the classes are the same."""
    mcp = protect(tool_scopes={"add": ["math"]})
    with pytest.raises(UnauthorizedError) as refused:
        Client.http(mcp.url, headers=bearer("not-a-token"), protocol_version=version,
                    timeout=30)
    assert refused.value.status == 401 and refused.value.code == -32600
    assert str(refused.value).startswith(f"HTTP 401 from {mcp.url}: {{")  # its own body
    token = "opaque-token-without-math"
    auth_server.tokens[token] = Issued("client-1", ["mcp"], mcp.url, auth_server.issuer)
    with Client.http(mcp.url, headers=bearer(token), protocol_version=version,
                     timeout=30) as client:
        with pytest.raises(InsufficientScopeError) as info:
            client.call_tool("add", {"a": 1, "b": 2})
        assert info.value.scopes == ["math"]
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_a_refused_token_is_not_taken_for_a_handshake_only_server(protect: Any):
    """``protocol_version="auto"`` (the default) probes with ``server/discover`` and
    falls back to the handshake when the server does not answer it. A refused token is
    no such sign: the handshake would be refused the same way, so it is not sent."""
    mcp = protect()
    with pytest.raises(UnauthorizedError):
        Client.http(mcp.url, headers=bearer("not-a-token"), timeout=30)
    assert mcp.refused == 1


class _Forgetful(dict[str, Issued]):
    """The authorization server's token table, as a resource server that refuses every
    token it is shown sees it (the token endpoint still records what it issues)."""

    def get(self, key: str, default: Any = None) -> Any:
        return default


def test_the_oauth_flow_whose_tokens_are_all_refused_is_unauthorized(protect: Any,
                                                                     auth_server: AuthServer):
    """When the authorizations run out on 401s, the OAuth client raises the same
    UnauthorizedError a static token gets (it raised a bare AuthorizationError)."""
    mcp = protect()
    auth_server.tokens = _Forgetful()
    with pytest.raises(UnauthorizedError) as info:
        Client.http(mcp.url, auth=headless(limits=OAuthLimits(max_reauthorizations=2)),
                    protocol_version="2026-07-28", timeout=30)
    assert info.value.status == 401
    assert info.value.www_authenticate == f'Bearer resource_metadata="{mcp.prm_url}"'
    assert auth_server.count("/authorize") <= 2
