"""The server's options, each through a whole flow: opaque tokens, a pre-registered
confidential client, signing key rotation, and the users' grants page (Flask)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcpsync import Client, HandlerContext, JwtVerifier, OAuth, ResourceServer, Server
from mcpsync.auth.issuer import (
    AuthorizationServer,
    IssuerUser,
    SqlIssuerStore,
    with_issuer,
)
from mcpsync.auth.issuer.store import secret_hash
from tests.serving import RunningServer

from .conftest import Site
from .driver import Browser, forms
from .oauth_steps import REDIRECT_URI, tokens, whoami_status

SECRET = "a-test-secret-that-is-long-enough-for-hmac-0123456789"


class Neutral:
    """A plain WSGI site: the MCP endpoint behind ``with_issuer``, everyone is Alice."""

    def __init__(self, store: Any = None, **options: Any) -> None:
        self._app: Any = None
        self.running = RunningServer(lambda e, s: self._app(e, s))
        self.base = self.running.base
        self.mcp = self.base + "/mcp"
        self.store = store if store is not None else SqlIssuerStore(":memory:")
        self.issuer = AuthorizationServer(
            self.base, resources=[self.mcp], store=self.store, secret_key=SECRET,
            current_user=lambda request: IssuerUser("alice", name="Alice"),
            login_url=lambda request, next_url: "/login", **options)
        server = Server("neutral")

        @server.tool()
        def whoami(ctx: HandlerContext) -> str:
            assert ctx.auth is not None
            return f"You are Alice (user {ctx.auth.subject})"

        self.mcp_app = server.wsgi_app(path="/mcp", auth=self.issuer.resource_server())
        self._app = with_issuer(self.mcp_app, self.issuer)

    def stop(self) -> None:
        self.running.stop()
        self.mcp_app.close()


@pytest.fixture
def neutral() -> Iterator[Any]:
    made: list[Neutral] = []

    def make(**options: Any) -> Neutral:
        made.append(Neutral(**options))
        return made[-1]

    yield make
    for site in made:
        site.stop()


def call(site: Any, oauth: OAuth) -> str:
    with Client.http(site.mcp, auth=oauth, protocol_version="2026-07-28") as client:
        return str(client.call_tool("whoami", {}).content[0].text)  # type: ignore[union-attr]


def test_opaque_tokens_are_stored_hashed_and_verified_by_the_store(neutral: Any) -> None:
    site = neutral(token_format="opaque")
    assert "jwks_uri" not in requests.get(
        site.base + "/.well-known/oauth-authorization-server", timeout=10).json()
    client_id, issued = tokens(site)  # type: ignore[arg-type]
    assert issued["access_token"].count(".") == 0
    assert whoami_status(site, issued["access_token"]) == 200  # type: ignore[arg-type]
    stored = site.store.get_token(secret_hash(issued["access_token"]), 0)
    assert stored is not None and stored.kind == "access"
    rows = site.store._db.execute("SELECT token_hash FROM oauth_tokens").fetchall()
    assert all(issued["access_token"] not in row[0] for row in rows)
    assert issued["refresh_token"] not in str(rows)
    requests.post(site.base + "/revoke", data={"token": issued["access_token"],
                                               "client_id": client_id}, timeout=10)
    assert whoami_status(site, issued["access_token"]) == 401  # type: ignore[arg-type]


def test_a_pre_registered_confidential_client(neutral: Any) -> None:
    site = neutral(clients={"backend": {
        "client_secret": "backend-secret", "client_name": "Backend",
        "redirect_uris": [REDIRECT_URI], "application_type": "native",
        "token_endpoint_auth_method": "client_secret_basic"}}, dynamic_registration=False)
    metadata = requests.get(site.base + "/.well-known/oauth-authorization-server",
                            timeout=10).json()
    assert "registration_endpoint" not in metadata
    oauth = OAuth(client_id="backend", client_secret="backend-secret",
                  redirect_uri=REDIRECT_URI, redirect_handler=Browser())
    assert call(site, oauth) == "You are Alice (user alice)"
    wrong = OAuth(client_id="backend", client_secret="not-the-secret",
                  redirect_uri=REDIRECT_URI, redirect_handler=Browser())
    from mcpsync import TokenRequestError

    with pytest.raises(TokenRequestError) as info:
        call(site, wrong)
    assert info.value.error == "invalid_client"
    assert requests.post(site.base + "/register", json={}, timeout=10).status_code == 404


def test_signing_keys_rotate_and_old_tokens_still_verify(neutral: Any) -> None:
    site = neutral()
    _, before = tokens(site)  # type: ignore[arg-type]
    site.issuer.keys.rotate()
    _, after = tokens(site)  # type: ignore[arg-type]
    import jwt

    kids = {jwt.get_unverified_header(t["access_token"])["kid"] for t in (before, after)}
    assert len(kids) == 2
    published = requests.get(site.base + "/jwks.json", timeout=10).json()["keys"]
    assert kids <= {key["kid"] for key in published}
    assert all("d" not in key for key in published)  # public keys only
    verifier = JwtVerifier(site.base + "/jwks.json", issuer=site.base, audience=site.mcp)
    guard = ResourceServer(verifier, resource=site.mcp, authorization_servers=[site.base])
    for issued in (before, after):
        verified = guard.authenticate(f"Bearer {issued['access_token']}")
        assert getattr(verified, "subject", None) == "alice"


def test_the_users_grants_page_lists_and_revokes(site: Site) -> None:
    client_id, issued = tokens(site)
    browser = Browser("alice")
    browser.sign_in(site.base)
    page = browser.get(site.base + "/oauth/grants")
    assert page.status_code == 200 and "attack test" in page.text
    assert page.headers["X-Frame-Options"] == "DENY"
    _, fields = forms(page.text)[0]
    assert fields["grant_id"] and fields["csrf_token"]
    # Bob cannot revoke Alice's grant, even with her form's token; nor Alice without it.
    bob = Browser("bob")
    bob.sign_in(site.base)
    assert "attack test" not in bob.get(site.base + "/oauth/grants").text
    stolen = bob.session.post(site.base + "/oauth/grants", data=fields,
                              allow_redirects=False, timeout=10)
    assert stolen.status_code == 403
    bare = browser.session.post(site.base + "/oauth/grants",
                                data={"grant_id": fields["grant_id"]},
                                allow_redirects=False, timeout=10)
    assert bare.status_code == 403
    assert whoami_status(site, issued["access_token"]) == 200
    revoked = browser.session.post(site.base + "/oauth/grants", data=fields,
                                   allow_redirects=False, timeout=10)
    assert revoked.status_code == 303
    assert whoami_status(site, issued["access_token"]) == 401
    assert "No application has access" in browser.get(site.base + "/oauth/grants").text
    assert client_id


def test_a_whole_flow_on_the_redis_store(neutral: Any, redis_url: str,
                                         redis_prefix: str) -> None:
    from mcpsync.auth.issuer.redis_store import RedisIssuerStore

    site = neutral(store=RedisIssuerStore(redis_url, prefix=redis_prefix))
    client_id, issued = tokens(site)  # type: ignore[arg-type]
    assert whoami_status(site, issued["access_token"]) == 200  # type: ignore[arg-type]
    refresh = {"grant_type": "refresh_token", "client_id": client_id}
    first = requests.post(site.base + "/token", timeout=10,
                          data={**refresh, "refresh_token": issued["refresh_token"]})
    assert first.status_code == 200
    reused = requests.post(site.base + "/token", timeout=10,
                           data={**refresh, "refresh_token": issued["refresh_token"]})
    assert reused.json()["error"] == "invalid_grant"
    assert whoami_status(site, first.json()["access_token"]) == 401  # type: ignore[arg-type]
    site.store.close()
