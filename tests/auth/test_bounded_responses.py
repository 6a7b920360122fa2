"""Every HTTP answer the auth code reads is bounded in bytes (#14): the JWKS of a
``JwtVerifier`` (``max_jwks_bytes``), an introspection answer, and on the client side the
metadata, registration and token answers. Past the bound the answer is abandoned (never
read whole), the token or the flow is refused, and nothing hangs. Each case is tried with
a declared Content-Length and with a chunked body that declares nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import (
    Client,
    IntrospectionVerifier,
    JwtVerifier,
    RegistrationError,
    ResourceServer,
    TokenRequestError,
)
from tests.helpers import require_module
from tests.http.raw import post_modern
from tests.serving import RunningServer

from .authserver import AuthServer
from .conftest import headless
from .test_resource_server import WAIT, bearer, challenge_of, make_server

require_module("jwt")

CHUNKED = [False, True]
BIG = 300 * 1024  # past every default bound (256 KiB; 64 KiB for introspection)


def _jwks_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "mcpsync.auth.server" and "max_jwks_bytes" in r.getMessage()]


@pytest.mark.parametrize("chunked", CHUNKED)
def test_a_jwks_past_max_jwks_bytes_refuses_the_tokens(
        protected: Any, jwt_auth: AuthServer, chunked: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcpsync.auth.server")
    mcp = protected()  # refresh_cooldown=0: every refused token may fetch again
    jwt_auth.chunked_padding = chunked
    jwt_auth.padding = {"/jwks": BIG}
    token = jwt_auth.mint(audience=mcp.url, scopes=["mcp"])
    for _ in range(3):
        response = post_modern(mcp.url, "tools/list", {}, headers=bearer(token))
        assert response.status_code == 401
        assert challenge_of(response).startswith('Bearer error="invalid_token"')
    fetches = jwt_auth.count("/jwks")
    assert fetches >= 1
    assert len(_jwks_warnings(caplog)) == fetches  # once per fetch, not per token
    jwt_auth.padding = {"/jwks": 100 * 1024}  # large, but within the bound
    assert post_modern(mcp.url, "tools/list", {}, headers=bearer(token)).status_code == 200


def test_max_jwks_bytes_is_the_verifier_s_own_bound(jwt_auth: AuthServer) -> None:
    token = jwt_auth.mint(audience="https://rs.example/mcp")
    small = JwtVerifier(jwt_auth.jwks_url, issuer=jwt_auth.issuer,
                        audience="https://rs.example/mcp", max_jwks_bytes=256,
                        refresh_cooldown=0)
    assert small.verify(token) is None  # one RSA key alone is more than 256 bytes
    fits = JwtVerifier(jwt_auth.jwks_url, issuer=jwt_auth.issuer,
                       audience="https://rs.example/mcp", max_jwks_bytes=8192)
    verified = fits.verify(token)
    assert verified is not None and verified.subject == "alice"


def test_unknown_kids_refetch_at_most_once_per_cooldown(jwt_auth: AuthServer) -> None:
    audience = "https://rs.example/mcp"
    verifier = JwtVerifier(jwt_auth.jwks_url, issuer=jwt_auth.issuer, audience=audience,
                           refresh_cooldown=3600)
    assert verifier.verify(jwt_auth.mint(audience=audience)) is not None
    assert jwt_auth.count("/jwks") == 1
    for n in range(5):
        assert verifier.verify(jwt_auth.mint(audience=audience, kid=f"made-up-{n}")) is None
    assert verifier.verify(jwt_auth.mint(audience=audience)) is not None  # still cached
    assert jwt_auth.count("/jwks") == 1


def test_an_unreachable_jwks_refuses_and_a_token_without_kid_is_refused(
        jwt_auth: AuthServer) -> None:
    audience = "https://rs.example/mcp"
    nowhere = JwtVerifier(jwt_auth.base + "/no-such-jwks", issuer=jwt_auth.issuer,
                          audience=audience)
    assert nowhere.verify(jwt_auth.mint(audience=audience)) is None
    import jwt

    keyless = jwt.encode({"iss": jwt_auth.issuer, "aud": audience, "exp": 2**33},
                         jwt_auth._signing_keys[-1][1], algorithm="RS256")
    verifier = JwtVerifier(jwt_auth.jwks_url, issuer=jwt_auth.issuer, audience=audience)
    assert verifier.verify(keyless) is None


@pytest.fixture
def opaque(jwt_auth: AuthServer) -> Iterator[str]:
    """A protected endpoint verifying ``jwt_auth``'s opaque tokens by introspection."""
    jwt_auth.jwt_tokens = False
    jwt_auth.clients["the-resource"] = "its-secret"
    holder: list[Any] = []
    running = RunningServer(lambda environ, start: holder[0](environ, start))
    url = running.base + "/mcp"
    verifier = IntrospectionVerifier(jwt_auth.issuer + "/introspect",
                                     client_id="the-resource", client_secret="its-secret")
    holder.append(make_server().wsgi_app(
        path="/mcp", auth=ResourceServer(verifier, resource=url,
                                         authorization_servers=[jwt_auth.issuer])))
    yield url
    running.stop()
    holder[0].close()


@pytest.mark.parametrize("chunked", CHUNKED)
def test_an_introspection_answer_past_its_bound_refuses_the_token(
        jwt_auth: AuthServer, opaque: str, chunked: bool) -> None:
    with Client.http(opaque, auth=headless(), timeout=WAIT,
                     protocol_version="2026-07-28") as client:
        assert client.list_tools() is not None
    [token] = list(jwt_auth.tokens)
    verifier = IntrospectionVerifier(jwt_auth.issuer + "/introspect",
                                     client_id="the-resource", client_secret="its-secret")
    assert verifier.verify(token) is not None
    jwt_auth.chunked_padding = chunked
    jwt_auth.padding = {"/introspect": 70 * 1024}  # past the 64 KiB default
    assert verifier.verify(token) is None
    assert post_modern(opaque, "tools/list", {}, headers=bearer(token)).status_code == 401


@pytest.mark.parametrize("chunked", CHUNKED)
@pytest.mark.parametrize("endpoint, error", [("/token", TokenRequestError),
                                             ("/register", RegistrationError)])
def test_the_oauth_client_abandons_an_answer_past_its_bound(
        protect: Any, auth_server: AuthServer, endpoint: str, error: type[Exception],
        chunked: bool) -> None:
    mcp = protect()
    auth_server.chunked_padding = chunked
    auth_server.padding = {endpoint: BIG}
    with pytest.raises(error, match="bound"), Client.http(
            mcp.url, auth=headless(), timeout=WAIT, protocol_version="2026-07-28") as client:
        client.list_tools()
    auth_server.padding = {}
    with Client.http(mcp.url, auth=headless(), timeout=WAIT,
                     protocol_version="2026-07-28") as client:
        assert client.list_tools() is not None


def test_an_answer_nested_too_deep_is_not_json_and_is_never_parsed_past_the_limit() -> None:
    # Metadata, registration and token answers are read with the bounds of a JSON-RPC
    # message: one nested past the limit is "not a JSON object" (the flow refuses it as
    # such), and the parser never descends far enough to starve what the garbage
    # collector runs meanwhile.
    from mcpsync.auth.fetch import Fetcher
    from tests.helpers import stack_probe
    from tests.transports.hostile import RawHttpServer, RawRequest

    deep = b'{"issuer":' + b"[" * 100_000 + b"]" * 100_000 + b"}"

    def serve(request: RawRequest) -> None:
        request.send_body(deep)

    with RawHttpServer(serve) as server, stack_probe() as headroom:
        answer = Fetcher(WAIT, 1024 * 1024).get_json(server.url)
    assert answer.status == 200 and answer.body is None
    assert headroom and all(headroom), "code run during the parse ran out of stack"
