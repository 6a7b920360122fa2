"""Bad input at every endpoint gets a clear OAuth error (or error page), never a 500 or a
traceback."""

from __future__ import annotations

import pytest
import requests

from .conftest import Site
from .driver import Browser
from .oauth_steps import REDIRECT_URI, Pkce, authorize_url, register

CASES = [
    ("GET", "/authorize", {}, None, None),
    ("GET", "/authorize?response_type=token&client_id=x", {}, None, None),
    ("GET", "/authorize?response_type=code", {}, None, None),
    ("GET", "/authorize?response_type=code&client_id=" + "x" * 5000, {}, None, None),
    ("GET", "/authorize?response_type=code&client_id=https://%00/x", {}, None, None),
    ("GET", "/authorize?response_type=code&client_id=a&client_id=b", {}, None, None),
    ("POST", "/authorize", {}, {"decision": "allow"}, None),
    ("GET", "/token", {}, None, None),
    ("POST", "/token", {}, {}, None),
    ("POST", "/token", {}, {"grant_type": "authorization_code", "code": "x",
                            "client_id": "nobody"}, None),
    ("POST", "/token", {}, {"grant_type": "refresh_token", "refresh_token": "x"}, None),
    ("POST", "/token", {"Authorization": "Basic %%%"}, {"grant_type": "refresh_token"}, None),
    ("POST", "/token", {"Content-Type": "application/json"}, None, b'{"grant_type": 1}'),
    ("POST", "/token", {"Content-Length": "99999999"}, None, b"x"),
    ("POST", "/revoke", {}, {}, None),
    ("POST", "/revoke", {}, {"token": "unknown", "client_id": "nobody"}, None),
    ("POST", "/register", {"Content-Type": "application/json"}, None, b"not json"),
    ("POST", "/register", {"Content-Type": "application/json"}, None, b"[1, 2]"),
    ("POST", "/register", {"Content-Type": "application/json"}, None,
     b'{"redirect_uris": "https://a/cb"}'),
    ("POST", "/register", {"Content-Type": "application/json"}, None,
     b'{"redirect_uris": ["https://a/cb"], "client_name": 7}'),
    ("POST", "/register", {"Content-Type": "application/json"}, None,
     b'{"redirect_uris": ["https://a/cb"], "grant_types": ["password"]}'),
    ("POST", "/register", {"Content-Type": "application/json"}, None,
     b'{"redirect_uris": ["https://a/cb"], "token_endpoint_auth_method": "private_key_jwt"}'),
]


@pytest.mark.parametrize(("method", "path", "headers", "form", "body"), CASES,
                         ids=[f"{m} {p[:60]}" for m, p, *_ in CASES])
def test_bad_input_is_refused_cleanly(site: Site, method: str, path: str,
                                      headers: dict[str, str], form: dict[str, str] | None,
                                      body: bytes | None) -> None:
    answer = requests.request(method, site.base + path, headers=headers, data=form or body,
                              allow_redirects=False, timeout=10)
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.text[:500])
    assert "Traceback" not in answer.text


def test_a_denied_consent_returns_access_denied_with_iss(site: Site) -> None:
    client_id = register(site)
    back = Browser().authorize(authorize_url(site, client_id, Pkce.new()), decision="deny")
    assert back.startswith(REDIRECT_URI)
    assert "error=access_denied" in back and "code=" not in back
    assert "iss=" in back and "state=st-1" in back
