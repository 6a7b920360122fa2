"""The upstream-identity proxy: the site's users sign in through an OpenID Connect
provider (a stand-in on loopback) and the site issues its own tokens to MCP clients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcpsync import Client, HandlerContext, OAuth, Server
from mcpsync.auth.issuer import (
    AuthorizationServer,
    SqlIssuerStore,
    UpstreamLogin,
    with_issuer,
    with_upstream,
)
from tests.serving import RunningServer

from .driver import Browser
from .oauth_steps import REDIRECT_URI
from .stand_in_provider import StandInProvider

SECRET = "a-test-secret-that-is-long-enough-for-hmac-0123456789"


class ProxiedSite:
    def __init__(self, provider: StandInProvider) -> None:
        self._app: Any = None
        self.running = RunningServer(lambda e, s: self._app(e, s))
        self.base = self.running.base
        self.upstream = UpstreamLogin.oidc(provider.issuer, name="corp", client_id="site",
                                           client_secret="site-secret",
                                           site_url=self.base, secret_key=SECRET)
        self.issuer = AuthorizationServer(
            self.base, resources=[self.base + "/mcp"], store=SqlIssuerStore(":memory:"),
            secret_key=SECRET, current_user=self.upstream.current_user,
            login_url=self.upstream.login_url)
        mcp = Server("proxied")

        @mcp.tool()
        def whoami(ctx: HandlerContext) -> str:
            assert ctx.auth is not None
            return f"{ctx.auth.claims.get('name')} ({ctx.auth.subject})"

        self.mcp_app = mcp.wsgi_app(path="/mcp", auth=self.issuer.resource_server())
        self._app = with_upstream(with_issuer(self.mcp_app, self.issuer), self.upstream)


@pytest.fixture
def provider() -> Iterator[StandInProvider]:
    stand_in = StandInProvider()
    yield stand_in
    stand_in.stop()


@pytest.fixture
def proxied(provider: StandInProvider) -> Iterator[ProxiedSite]:
    site = ProxiedSite(provider)
    yield site
    site.running.stop()
    site.mcp_app.close()


def test_sign_in_upstream_then_tokens_of_the_site(proxied: ProxiedSite,
                                                  provider: StandInProvider) -> None:
    browser = Browser(stop_at=REDIRECT_URI)
    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=browser, client_name="proxy")
    with Client.http(proxied.base + "/mcp", auth=oauth, protocol_version="2026-07-28") as c:
        text = str(c.call_tool("whoami", {}).content[0].text)  # type: ignore[union-attr]
    assert text == "Carol (corp:carol-123)"
    assert provider.token_requests == 1  # the site exchanged the provider's code once
    assert "proxy" in browser.consent_pages[0]
    token = oauth.token_for(proxied.base + "/mcp")
    assert token is not None and token.access_token not in provider.tokens
    # The next authorization in the same browser needs no second trip upstream.
    again = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=browser, client_name="again")
    with Client.http(proxied.base + "/mcp", auth=again, protocol_version="2026-07-28") as c:
        c.call_tool("whoami", {})
    assert provider.token_requests == 1


def test_a_callback_not_started_in_this_browser_is_refused(proxied: ProxiedSite,
                                                           provider: StandInProvider) -> None:
    # Login CSRF: an attacker's own callback URL, opened in the victim's browser.
    attacker = requests.Session()
    start = attacker.get(proxied.base + "/login/upstream?next=/", allow_redirects=False,
                         timeout=10)
    upstream = attacker.get(start.headers["Location"], allow_redirects=False, timeout=10)
    victim = requests.Session()
    answer = victim.get(upstream.headers["Location"], allow_redirects=False, timeout=10)
    assert answer.status_code == 400 and "mcpsync_upstream_user" not in answer.headers.get(
        "Set-Cookie", "")
    assert provider.token_requests == 0
