"""The whole flow against the example site: mcpsync's own OAuth client registers (dynamic
registration, or a client ID metadata document), the user signs in and approves on the
consent page, the client calls a tool with the token, refreshes it, and revokes it."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from mcpsync import Client, OAuth, UnauthorizedError
from tests.serving import RunningServer

from .conftest import Site
from .driver import Browser

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never requested: the browser stops there
VERSION = "2026-07-28"


def whoami(site: Site, oauth: OAuth) -> str:
    with Client.http(site.mcp, auth=oauth, protocol_version=VERSION, timeout=30) as client:
        result = client.call_tool("whoami", {})
    return str(result.content[0].text)  # type: ignore[union-attr]


def test_dynamic_registration_code_flow_tool_call(site: Site) -> None:
    browser = Browser("alice")
    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=browser, client_name="flow")
    assert whoami(site, oauth).startswith("You are Alice (user alice)")
    assert len(browser.consent_pages) == 1
    assert "flow" in browser.consent_pages[0] and REDIRECT_URI in browser.consent_pages[0]
    grants = site.issuer.store.grants_of("alice")
    assert len(grants) == 1
    client = site.issuer.store.get_client(grants[0].client_id, 0)
    assert client is not None and client.source == "dynamic"
    assert client.metadata["application_type"] == "native"


def test_metadata_document_client(site: Site) -> None:
    document: dict[str, Any] = {}

    def serve(environ: dict[str, Any], start: Any) -> list[bytes]:
        start("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(document).encode()]

    with RunningServer(serve) as host:
        url = host.base + "/oauth/client.json"
        document.update(client_id=url, client_name="Document Client",
                        redirect_uris=[REDIRECT_URI], application_type="native",
                        grant_types=["authorization_code", "refresh_token"],
                        token_endpoint_auth_method="none")
        browser = Browser("bob")
        oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=browser,
                      client_metadata_url=url)
        assert whoami(site, oauth).startswith("You are Bob (user bob)")
    assert "Document Client" in browser.consent_pages[0]
    assert site.issuer.store.grants_of("bob")[0].client_id == url


def token_request(site: Site, **form: str) -> requests.Response:
    return requests.post(site.base + "/token", data=form, timeout=10)


def test_refresh_rotates_and_revocation_ends_access(site: Site) -> None:
    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=Browser("alice"))
    whoami(site, oauth)
    token = oauth.token_for(site.mcp)
    assert token is not None and token.refresh_token
    client_id = site.issuer.store.grants_of("alice")[0].client_id
    answer = token_request(site, grant_type="refresh_token", client_id=client_id,
                           refresh_token=token.refresh_token)
    assert answer.status_code == 200, answer.text
    fresh = answer.json()
    assert fresh["refresh_token"] != token.refresh_token
    # The new access token works at /mcp.
    headers = {"Authorization": f"Bearer {fresh['access_token']}"}
    with Client.http(site.mcp, headers=headers, protocol_version=VERSION) as client:
        assert "alice" in str(client.call_tool("whoami", {}).content[0].text)  # type: ignore[union-attr]
    # Revocation (RFC 7009) of the refresh token ends the grant and its access tokens.
    revoked = requests.post(site.base + "/revoke", timeout=10,
                            data={"token": fresh["refresh_token"],
                                  "client_id": client_id})
    assert revoked.status_code == 200, revoked.text
    with pytest.raises(UnauthorizedError), Client.http(site.mcp, headers=headers,
                                                        protocol_version=VERSION) as client:
        client.call_tool("whoami", {})
    again = token_request(site, grant_type="refresh_token", client_id=client_id,
                          refresh_token=fresh["refresh_token"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert site.issuer.store.grants_of("alice") == []
