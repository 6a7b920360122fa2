"""The MCP endpoint inside the test site's URLconf (``path("mcp", mcp_endpoint())``),
served by real servers: Django's middleware runs for it, the site's users are the MCP
principals (session, DRF token, a remote-user header), anonymous and foreign requests are
refused, and a handshake-era session belongs to the user that made it."""

from __future__ import annotations

import re

import pytest
import requests

from mcpsync import Client
from mcpsync.errors import MCPError, TransportError

VERSIONS = ["2025-11-25", "2026-07-28"]
TOKEN = {"alice": {"Authorization": "Token alice-token"},
         "bob": {"Authorization": "Token bob-token"}}
MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "whoami"}


def _call(name: str) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": {},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}


def login(base: str, username: str) -> str:
    """Log in through the site's login form (CSRF and all); the session cookie."""
    with requests.Session() as browser:
        form = browser.get(base + "/login/", timeout=20)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token, form.text
        done = browser.post(base + "/login/", timeout=20, allow_redirects=False,
                            data={"username": username, "password": "secret",
                                  "csrfmiddlewaretoken": token.group(1)})
        assert done.status_code == 302, done.text
        return f"sessionid={browser.cookies['sessionid']}"


@pytest.mark.parametrize("version", VERSIONS)
def test_each_way_of_signing_in_is_the_mcp_principal(site, version):
    ways = {
        "alice (no header)": TOKEN["alice"],                   # DRF TokenAuthentication
        "bob (no header)": TOKEN["bob"],
        "bob (remote-user)": {"X-Remote-User": "bob"},         # RemoteUserMiddleware
        "alice (no header) ": {"Cookie": login(site, "alice")},  # a session, no CSRF token
        # a middleware that read the body first (request.body): the endpoint still has it
        "alice (no header)  ": {**TOKEN["alice"], "X-Peek": "1"},
    }
    for expected, headers in ways.items():
        with Client.http(site + "/mcp", protocol_version=version, timeout=20,
                         headers=headers) as client:
            assert client.call_tool("whoami").text == expected.strip()


def test_django_middleware_runs_for_the_endpoint(site):
    # ALLOWED_HOSTS: Django refuses another Host before the view.
    refused = requests.post(site + "/mcp", json=_call("whoami"), timeout=20,
                            headers={**MCP_HEADERS, **TOKEN["alice"], "Host": "evil.example"})
    assert refused.status_code == 400
    # The other pages still need a login (LoginRequiredMiddleware), the endpoint answers
    # an anonymous client in MCP's terms instead of redirecting it to an HTML form.
    page = requests.get(site + "/orders/", timeout=20, allow_redirects=False)
    assert page.status_code == 302 and page.headers["Location"].startswith("/login/")
    anonymous = requests.post(site + "/mcp", json=_call("whoami"), timeout=20,
                              headers=MCP_HEADERS)
    assert anonymous.status_code == 403
    assert anonymous.json()["error"]["code"] == -32600
    # A bad DRF token: DRF's refusal, with its challenge.
    bad = requests.post(site + "/mcp", json=_call("whoami"), timeout=20,
                        headers={**MCP_HEADERS, "Authorization": "Token nope"})
    assert bad.status_code == 401 and bad.headers["WWW-Authenticate"] == "Token"
    # Django's own response headers (SecurityMiddleware) are on MCP answers too.
    ok = requests.post(site + "/mcp", json=_call("whoami"), timeout=20,
                       headers={**MCP_HEADERS, **TOKEN["alice"]})
    assert ok.status_code == 200, ok.text
    assert ok.headers["X-Content-Type-Options"] == "nosniff"
    assert ok.json()["result"]["content"][0]["text"] == "alice (no header)"


def test_a_foreign_origin_is_refused_the_sites_own_is_not(site):
    cookie = {"Cookie": login(site, "alice")}
    foreign = requests.post(site + "/mcp", json=_call("whoami"), timeout=20,
                            headers={**MCP_HEADERS, **cookie, "Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "Origin" in foreign.json()["error"]["message"]
    own = requests.post(site + "/mcp", json=_call("whoami"), timeout=20,
                        headers={**MCP_HEADERS, **cookie, "Origin": site})
    assert own.status_code == 200, own.text


def test_a_session_belongs_to_the_user_that_made_it(site):
    legacy = {**MCP_HEADERS, "MCP-Protocol-Version": "2025-11-25"}
    made = requests.post(site + "/mcp", timeout=20, headers={**legacy, **TOKEN["alice"]},
                         json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}}})
    assert made.status_code == 200, made.text
    session = {"Mcp-Session-Id": made.headers["Mcp-Session-Id"]}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    taken = requests.post(site + "/mcp", json=listing, timeout=20,
                          headers={**legacy, **TOKEN["bob"], **session})
    assert taken.status_code == 404, taken.text
    unknown = requests.post(site + "/mcp", json=listing, timeout=20,
                            headers={**legacy, **TOKEN["bob"], "Mcp-Session-Id": "0" * 32})
    assert taken.json() == unknown.json()  # another's session looks like no session at all
    own = requests.post(site + "/mcp", json=listing, timeout=20,
                        headers={**legacy, **TOKEN["alice"], **session})
    assert own.status_code == 200, own.text


def test_an_anonymous_client_gets_an_error_not_a_login_page(site):
    with (pytest.raises((MCPError, TransportError)) as refused,
          Client.http(site + "/mcp", timeout=20) as client):
        client.call_tool("whoami")
    assert "signed-in users only" in str(refused.value)
