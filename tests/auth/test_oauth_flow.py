"""The OAuth client end to end: ``Client.http(url, auth=OAuth(...))`` against a real
authorization server and a protected MCP endpoint on loopback sockets (both eras)."""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpsync import (
    AuthorizationResponseError,
    Client,
    FileTokenStorage,
    InsufficientScopeError,
    IssuerMismatchError,
    OAuth,
    OAuthLimits,
    PKCENotSupportedError,
    RegistrationError,
    ResourceMismatchError,
)
from tests.http.raw import post_modern

from .authserver import AuthServer
from .conftest import REDIRECT_URI, headless

ERAS = ["2025-11-25", "2026-07-28"]


def connect(url: str, oauth: OAuth, version: str) -> Client:
    return Client.http(url, auth=oauth, protocol_version=version, timeout=30.0)


def refused(url: str, oauth: OAuth, version: str, error: type[Exception],
            match: str | None = None) -> None:
    """Connecting and listing tools fails with ``error`` (wherever the first request is)."""
    with pytest.raises(error, match=match), connect(url, oauth, version) as client:
        client.list_tools()


@pytest.mark.parametrize("version", ERAS)
def test_first_401_runs_the_whole_flow_and_the_call_succeeds(auth_server: AuthServer,
                                                             protect: Any, version: str):
    mcp = protect()
    oauth = headless()
    with connect(mcp.url, oauth, version) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        assert client.list_tools()
    # Dynamic registration (no client id, no CIMD), one authorization, one code exchange.
    assert auth_server.count("/register") == 1
    assert auth_server.count("/authorize") == 1
    [authorize] = auth_server.requests_to("/authorize")
    [token] = auth_server.requests_to("/token")
    assert authorize.params["code_challenge_method"] == "S256"
    verifier = token.params["code_verifier"]
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert authorize.params["code_challenge"] == challenge
    # RFC 8707: the resource is the MCP endpoint, in both requests.
    assert authorize.params["resource"] == token.params["resource"] == mcp.url
    assert authorize.params["redirect_uri"] == REDIRECT_URI
    # DCR metadata: a native app (loopback redirect) that wants refresh tokens.
    [register] = auth_server.requests_to("/register")
    assert register.params["application_type"] == "native"
    assert "refresh_token" in register.params["grant_types"]


def test_discovery_requests_carry_the_protocol_version(auth_server: AuthServer, protect: Any):
    mcp = protect()
    with connect(mcp.url, headless(), "2026-07-28") as client:
        client.list_tools()
    [metadata] = auth_server.requests_to("/.well-known/oauth-authorization-server")
    assert metadata.headers.get("Mcp-Protocol-Version") == "2026-07-28"


def test_pre_registered_credentials_come_first_and_use_basic(auth_server: AuthServer,
                                                             protect: Any):
    auth_server.clients["pre-id"] = "pre secret/with:odd chars"
    auth_server.cimd = True
    mcp = protect()
    oauth = headless(client_id="pre-id", client_secret="pre secret/with:odd chars",
                     client_metadata_url="https://client.example/meta.json")
    with connect(mcp.url, oauth, "2026-07-28") as client:
        client.list_tools()
    assert auth_server.count("/register") == 0
    [authorize] = auth_server.requests_to("/authorize")
    assert authorize.params["client_id"] == "pre-id"
    [token] = auth_server.requests_to("/token")
    assert token.headers["Authorization"].startswith("Basic ")
    assert "client_secret" not in token.params


def test_client_id_metadata_document_when_the_server_supports_it(auth_server: AuthServer,
                                                                 protect: Any):
    auth_server.cimd = True
    mcp = protect()
    oauth = headless(client_metadata_url="https://client.example/meta.json")
    with connect(mcp.url, oauth, "2026-07-28") as client:
        client.list_tools()
    assert auth_server.count("/register") == 0
    assert auth_server.requests_to("/authorize")[0].params["client_id"] == (
        "https://client.example/meta.json")


def test_no_way_to_register_is_a_clear_error(auth_server: AuthServer, protect: Any):
    auth_server.registration = False
    mcp = protect()
    refused(mcp.url, headless(), "2026-07-28", RegistrationError, "client_id")


def test_pkce_not_advertised_is_refused_before_any_authorization(auth_server: AuthServer,
                                                                 protect: Any):
    auth_server.pkce_methods = None
    mcp = protect()
    refused(mcp.url, headless(), "2025-11-25", PKCENotSupportedError, "S256")
    auth_server.pkce_methods = ["plain"]
    refused(mcp.url, headless(), "2025-11-25", PKCENotSupportedError)
    assert auth_server.count("/authorize") == 0


def test_metadata_whose_issuer_differs_is_refused(auth_server: AuthServer, protect: Any):
    auth_server.metadata_issuer = "https://attacker.example.com"
    mcp = protect()
    refused(mcp.url, headless(), "2026-07-28", IssuerMismatchError, "attacker")
    assert auth_server.count("/register") == auth_server.count("/authorize") == 0


def test_resource_metadata_for_another_resource_is_refused(auth_server: AuthServer,
                                                           protect: Any):
    mcp = protect(resource="https://evil.example.com/mcp")
    refused(mcp.url, headless(), "2026-07-28", ResourceMismatchError, "evil")
    assert auth_server.count("/.well-known/oauth-authorization-server") == 0


@pytest.mark.parametrize(("mode", "advertised", "accepted"), [
    ("correct", True, True), ("omit", None, True), ("omit", True, False),
    ("wrong", True, False), ("wrong", None, False), ("slash", True, False)])
def test_rfc9207_iss_checks(auth_server: AuthServer, protect: Any, mode: str,
                            advertised: bool | None, accepted: bool):
    auth_server.iss_mode = mode
    auth_server.advertise_iss = advertised
    mcp = protect()
    if accepted:
        with connect(mcp.url, headless(), "2026-07-28") as client:
            client.list_tools()
    else:
        refused(mcp.url, headless(), "2026-07-28", AuthorizationResponseError, "iss")
    assert auth_server.count("/token") == (1 if accepted else 0)


def test_scope_comes_from_the_challenge_then_scopes_supported_else_is_omitted(
        auth_server: AuthServer, protect: Any):
    auth_server.scopes_supported = ["mcp:read", "mcp:write", "offline_access"]
    challenged = protect(scopes=["mcp:read"], scopes_supported=["mcp:read", "mcp:write"])
    with connect(challenged.url, headless(), "2026-07-28") as client:
        client.list_tools()
    # From WWW-Authenticate, plus offline_access because the AS lists it.
    assert auth_server.requests_to("/authorize")[-1].params["scope"] == (
        "mcp:read offline_access")

    listed = protect(scopes=["mcp:read"], scopes_supported=["mcp:read", "mcp:write"],
                     challenge_scope=False)
    with connect(listed.url, headless(offline_access=False), "2026-07-28") as client:
        client.list_tools()
    assert auth_server.requests_to("/authorize")[-1].params["scope"] == "mcp:read mcp:write"

    auth_server.scopes_supported = None
    bare = protect()
    with connect(bare.url, headless(), "2026-07-28") as client:
        client.list_tools()
    assert "scope" not in auth_server.requests_to("/authorize")[-1].params


@pytest.mark.parametrize("version", ERAS)
def test_step_up_on_403_asks_for_the_union_of_scopes(auth_server: AuthServer, protect: Any,
                                                     version: str):
    mcp = protect(scopes=["mcp:read"], tool_scopes={"add": ["mcp:write"]})
    with connect(mcp.url, headless(offline_access=False), version) as client:
        client.list_tools()
        assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}
    scopes = [s.params.get("scope") for s in auth_server.requests_to("/authorize")]
    assert scopes == ["mcp:read", "mcp:read mcp:write"]


def test_step_up_is_bounded(auth_server: AuthServer, protect: Any):
    mcp = protect(scopes=["mcp:admin"])
    mcp.always_forbid = True
    oauth = headless(limits=OAuthLimits(max_reauthorizations=3))
    refused(mcp.url, oauth, "2025-11-25", InsufficientScopeError, "mcp:admin")
    assert auth_server.count("/authorize") <= 3


def test_expired_token_is_refreshed_before_the_request(auth_server: AuthServer,
                                                       protect: Any):
    auth_server.expires_in = 1  # inside the 30 s skew: stale at once
    mcp = protect()
    oauth = headless()
    with connect(mcp.url, oauth, "2026-07-28") as client:
        client.list_tools()
        first = oauth.token_for(mcp.url)
        client.list_tools()
        second = oauth.token_for(mcp.url)
    assert auth_server.count("/authorize") == 1
    grants = [s.params["grant_type"] for s in auth_server.requests_to("/token")]
    assert grants[0] == "authorization_code" and "refresh_token" in grants
    refresh = next(s for s in auth_server.requests_to("/token")
                   if s.params["grant_type"] == "refresh_token")
    assert refresh.params["resource"] == mcp.url
    assert first is not None and second is not None
    assert first.access_token != second.access_token


def test_a_refused_refresh_falls_back_to_authorizing_again(auth_server: AuthServer,
                                                           protect: Any):
    mcp = protect()
    oauth = headless()
    with connect(mcp.url, oauth, "2026-07-28") as client:
        client.list_tools()
        auth_server.tokens.clear()          # the server forgets the access token...
        auth_server._refresh.clear()        # ...and the refresh token
        client.list_tools()
    assert auth_server.count("/authorize") == 2


def test_a_new_authorization_server_gets_a_new_registration(auth_server: AuthServer,
                                                            protect: Any):
    mcp = protect()
    oauth = headless()
    second = AuthServer()
    try:
        with connect(mcp.url, oauth, "2026-07-28") as client:
            client.list_tools()
            first_client = auth_server.requests_to("/authorize")[0].params["client_id"]
            mcp.auth = second               # the resource moved to another issuer
            client.list_tools()
        assert second.count("/register") == 1
        assert all(s.params.get("client_id") != first_client
                   for s in second.requests_to("/authorize") + second.requests_to("/token"))
    finally:
        second.stop()


def test_one_authorization_for_many_threads(auth_server: AuthServer, protect: Any):
    mcp = protect()
    oauth = headless()
    start = threading.Barrier(8)
    statuses: list[int] = []

    def call() -> None:
        start.wait(10.0)
        statuses.append(post_modern(mcp.url, "tools/list", auth=oauth).status_code)

    threads = [threading.Thread(target=call, name=f"oauth-test-{i}") for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60.0)
    assert statuses == [200] * 8
    assert auth_server.count("/authorize") == 1


def test_file_storage_is_private_and_spares_a_second_authorization(
        auth_server: AuthServer, protect: Any, tmp_path: Path):
    path = tmp_path / "tokens.json"
    mcp = protect()
    with connect(mcp.url, headless(storage=FileTokenStorage(path)), "2026-07-28") as client:
        client.list_tools()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with connect(mcp.url, headless(storage=FileTokenStorage(path)), "2026-07-28") as client:
        client.list_tools()
    assert auth_server.count("/authorize") == 1


def test_tokens_never_reach_logs_or_reprs(auth_server: AuthServer, protect: Any,
                                          caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)
    auth_server.clients["pre-id"] = "s3cret-value"
    mcp = protect(tool_scopes={"add": ["mcp:write"]})
    oauth = headless(client_id="pre-id", client_secret="s3cret-value")
    with connect(mcp.url, oauth, "2026-07-28") as client:
        client.list_tools()
        client.call_tool("add", {"a": 1, "b": 2})
    token = oauth.token_for(mcp.url)
    assert token is not None
    secrets_ = [token.access_token, token.refresh_token or "-", "s3cret-value"]
    shown = caplog.text + repr(oauth) + repr(token) + repr(oauth.storage)
    for secret in secrets_:
        assert secret not in shown


def test_plain_requests_can_use_it(auth_server: AuthServer, protect: Any):
    mcp = protect()
    oauth = headless()
    reply = post_modern(mcp.url, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}},
                        auth=oauth)
    assert reply.status_code == 200 and '"result":3' in reply.text.replace(" ", "")
    assert [r.status_code for r in reply.history] == [401]
