"""The client-credentials extension: a client secret (basic or post) and ``private_key_jwt``
(a PEM key, signed by PyJWT) against the real test authorization server."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpsync import Client, OAuth, TokenRequestError

from .authserver import AuthServer


def _keypair() -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_secret(auth_server: AuthServer, protect: Any, method: str):
    auth_server.clients["svc"] = "svc-secret"
    auth_server.auth_methods = [method]
    mcp = protect(scopes=["mcp:read"])
    oauth = OAuth.client_credentials("svc", client_secret="svc-secret")
    with Client.http(mcp.url, auth=oauth, protocol_version="2026-07-28") as client:
        assert client.call_tool("add", {"a": 4, "b": 5}).structured_content == {"result": 9}
    assert auth_server.count("/authorize") == 0
    [token] = auth_server.requests_to("/token")
    assert token.params["grant_type"] == "client_credentials"
    assert token.params["scope"] == "mcp:read"
    assert token.params["resource"] == mcp.url
    if method == "client_secret_basic":
        assert token.headers["Authorization"].startswith("Basic ")
    else:
        assert token.params["client_secret"] == "svc-secret"


def test_private_key_jwt(auth_server: AuthServer, protect: Any):
    private, public = _keypair()
    auth_server.jwt_keys["svc"] = public
    mcp = protect()
    oauth = OAuth.client_credentials("svc", private_key_pem=private, signing_algorithm="ES256")
    with Client.http(mcp.url, auth=oauth, protocol_version="2025-11-25") as client:
        assert client.list_tools()
    [token] = auth_server.requests_to("/token")
    assert token.params["client_assertion_type"] == (
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")


def test_wrong_secret_is_a_token_request_error(auth_server: AuthServer, protect: Any):
    auth_server.clients["svc"] = "right"
    mcp = protect()
    oauth = OAuth.client_credentials("svc", client_secret="wrong")
    with pytest.raises(TokenRequestError, match="invalid_client") as caught, Client.http(
            mcp.url, auth=oauth, protocol_version="2026-07-28") as client:
        client.list_tools()
    assert caught.value.error == "invalid_client"
    assert "wrong" not in str(caught.value)


def test_exactly_one_credential():
    with pytest.raises(ValueError):
        OAuth.client_credentials("svc")
    with pytest.raises(ValueError):
        OAuth.client_credentials("svc", client_secret="s", private_key_pem="k")


def test_mcpsync_imports_without_pyjwt_and_says_how_to_get_it():
    """The auth extra is optional: with ``jwt`` unimportable, mcpsync and OAuth still work,
    and asking for private_key_jwt fails at once with the pip command."""
    script = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "jwt" or name.startswith("jwt."):
                    raise ImportError("blocked for the test")
        sys.meta_path.insert(0, Block())
        import mcpsync
        mcpsync.OAuth()
        mcpsync.OAuth.client_credentials("svc", client_secret="s")
        try:
            mcpsync.OAuth.client_credentials("svc", private_key_pem="k")
        except ImportError as exc:
            print("ImportError:", exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pip install 'mcpsync[auth]'" in done.stdout


def test_jwt_bearer_grant_sends_the_workload_token(auth_server: AuthServer, protect: Any):
    auth_server.workload_jwts.add("workload.jwt.value")
    mcp = protect(scopes=["mcp:read"])
    rotations: list[int] = []

    def current() -> str:
        rotations.append(1)
        return "workload.jwt.value"

    oauth = OAuth.jwt_bearer(current, client_id="wl")
    with Client.http(mcp.url, auth=oauth, protocol_version="2026-07-28") as client:
        assert client.list_tools()
    [token] = auth_server.requests_to("/token")
    assert token.params["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert token.params["assertion"] == "workload.jwt.value"
    assert token.params["resource"] == mcp.url and token.params["scope"] == "mcp:read"
    assert rotations == [1] and auth_server.count("/authorize") == 0


def test_jwt_bearer_refusal_is_surfaced_without_retry(auth_server: AuthServer, protect: Any):
    mcp = protect()
    oauth = OAuth.jwt_bearer("expired.jwt.value")
    with pytest.raises(TokenRequestError, match="invalid_grant"), Client.http(
            mcp.url, auth=oauth, protocol_version="2026-07-28") as client:
        client.list_tools()
    assert auth_server.count("/token") == 1 and auth_server.count("/authorize") == 0


def test_enterprise_managed_authorization(auth_server: AuthServer, protect: Any):
    """SEP-990: the ID token is exchanged at the IdP for an ID-JAG addressed to the MCP
    server's authorization server and resource; that is the JWT-bearer grant there."""
    idp = AuthServer()
    try:
        idp.id_tokens.add("user.id.token")
        auth_server.clients["ent-client"] = "ent-secret"
        mcp = protect(scopes=["mcp:read"])
        oauth = OAuth.enterprise(id_token="user.id.token",
                                 idp_token_endpoint=f"{idp.issuer}/token",
                                 idp_client_id="idp-client", client_id="ent-client",
                                 client_secret="ent-secret")
        auth_server.trusted_idp = idp
        with Client.http(mcp.url, auth=oauth, protocol_version="2026-07-28") as client:
            assert client.list_tools()
        [exchange] = idp.requests_to("/token")
        assert exchange.params["audience"] == auth_server.issuer
        assert exchange.params["resource"] == mcp.url
        assert exchange.params["subject_token_type"] == (
            "urn:ietf:params:oauth:token-type:id_token")
        [grant] = auth_server.requests_to("/token")
        assert grant.params["assertion"] in idp.issued_jags
        assert grant.headers["Authorization"].startswith("Basic ")
        assert auth_server.count("/authorize") == 0
    finally:
        idp.stop()


def test_an_unreachable_token_endpoint_reads_as_a_person_would_say_it(
        auth_server: AuthServer, protect: Any):
    """The error names the endpoint and says "connection refused", not urllib3's retry text
    ("HTTPConnectionPool(...): Max retries exceeded ... NewConnectionError ...")."""
    from tests.serving import free_port

    auth_server.clients["svc"] = "svc-secret"
    dead = f"http://127.0.0.1:{free_port()}/token"
    auth_server.metadata_overrides["token_endpoint"] = dead
    mcp = protect()
    oauth = OAuth.client_credentials("svc", client_secret="svc-secret")
    with pytest.raises(TokenRequestError) as caught:
        Client.http(mcp.url, auth=oauth, protocol_version="2026-07-28")
    message = str(caught.value)
    assert f"cannot connect to {dead}: connection refused" in message, message
    assert "Max retries" not in message and "HTTPConnectionPool" not in message, message
