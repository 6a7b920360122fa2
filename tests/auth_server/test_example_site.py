"""examples/oauth_site.py as a real subprocess (``--port N``), and under gunicorn with two
workers sharing the SQLite store: mcpsync's own OAuth client registers (dynamic
registration, then a client ID metadata document), the user signs in and approves, the
client calls ``whoami``, refreshes, and revokes; in both eras."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import Client, OAuth
from tests.serving import ROOT, RunningServer, free_port, serving_process

from .driver import Browser
from .oauth_steps import REDIRECT_URI

SECRET = "a-test-secret-that-is-long-enough-for-hmac-0123456789"


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OAUTH_SITE_SECRET=SECRET, **extra)


@pytest.fixture
def example_site() -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "examples/oauth_site.py", "--port", str(port),
            "--allow-loopback-clients"]
    with serving_process(argv, port, cwd=ROOT, env=_env()) as base:
        yield base


@pytest.fixture
def gunicorn_site(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--workers", "2",
            "--threads", "4", "--bind", f"127.0.0.1:{port}",
            "examples.oauth_site:create_app_from_env()"]
    env = _env(OAUTH_SITE_BASE_URL=f"http://127.0.0.1:{port}",
               OAUTH_SITE_STORE=str(tmp_path / "oauth.db"),
               OAUTH_SITE_ALLOW_LOOPBACK_CLIENTS="1")
    with serving_process(argv, port, cwd=ROOT, env=env) as base:
        yield base


@pytest.fixture
def client_document() -> Iterator[str]:
    """A client ID metadata document served on loopback; its URL."""
    document: dict[str, Any] = {}

    def serve(environ: dict[str, Any], start: Any) -> list[bytes]:
        start("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(document).encode()]

    with RunningServer(serve) as host:
        url = host.base + "/client.json"
        document.update(client_id=url, client_name="Example Document Client",
                        redirect_uris=[REDIRECT_URI], application_type="native",
                        grant_types=["authorization_code", "refresh_token"],
                        token_endpoint_auth_method="none")
        yield url


def full_flow(base: str, oauth: OAuth, user: str, version: str) -> None:
    mcp = base + "/mcp"
    with Client.http(mcp, auth=oauth, protocol_version=version, timeout=30) as client:
        text = str(client.call_tool("whoami", {}).content[0].text)  # type: ignore[union-attr]
        assert text.startswith(f"You are {user.title()} (user {user})"), text
    token = oauth.token_for(mcp)
    assert token is not None and token.refresh_token
    # The client id the server knows this client by: the token names it.
    import jwt

    client_id = jwt.decode(token.access_token, options={"verify_signature": False})["client_id"]
    refreshed = requests.post(base + "/token", timeout=10, data={
        "grant_type": "refresh_token", "refresh_token": token.refresh_token,
        "client_id": client_id})
    assert refreshed.status_code == 200, refreshed.text
    fresh = refreshed.json()
    headers = {"Authorization": f"Bearer {fresh['access_token']}"}
    with Client.http(mcp, headers=headers, protocol_version=version, timeout=30) as client:
        assert user in str(client.call_tool("whoami", {}).content[0].text)  # type: ignore[union-attr]
    revoked = requests.post(base + "/revoke", timeout=10,
                            data={"token": fresh["refresh_token"], "client_id": client_id})
    assert revoked.status_code == 200
    refused = requests.post(mcp, timeout=10, headers={**headers,
                                                      "Content-Type": "application/json"},
                            data="{}")
    assert refused.status_code == 401


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_example_site_dynamic_registration(example_site: str, version: str) -> None:
    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=Browser("alice"))
    full_flow(example_site, oauth, "alice", version)


def test_example_site_metadata_document(example_site: str, client_document: str) -> None:
    browser = Browser("bob")
    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=browser,
                  client_metadata_url=client_document)
    full_flow(example_site, oauth, "bob", "2026-07-28")
    assert "Example Document Client" in browser.consent_pages[0]


def test_two_gunicorn_workers_share_the_store(gunicorn_site: str, client_document: str) -> None:
    # Several complete flows: each request may reach either worker (a code issued by one
    # is exchanged at the other, a refresh token rotated by one is refreshed at the other).
    for user in ("alice", "bob", "alice"):
        full_flow(gunicorn_site, OAuth(redirect_uri=REDIRECT_URI,
                                       redirect_handler=Browser(user)), user, "2026-07-28")
    full_flow(gunicorn_site, OAuth(redirect_uri=REDIRECT_URI, redirect_handler=Browser("bob"),
                                   client_metadata_url=client_document), "bob", "2026-07-28")


def test_two_processes_sharing_the_store_serve_one_flow_in_turns(tmp_path: Path) -> None:
    """Every step at the other process than the one before: the code issued by A is
    exchanged at B, the refresh token B issued is rotated at A, its reuse is caught at B,
    and the revoked grant's access token is refused by A's MCP endpoint."""
    from .oauth_steps import Pkce, authorize_url, callback, whoami_status

    ports = [free_port(), free_port()]
    base = f"http://127.0.0.1:{ports[0]}"  # the public URL both serve (a balancer's)
    store = str(tmp_path / "oauth.db")
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(serving_process(
            [sys.executable, "examples/oauth_site.py", "--port", str(port), "--base-url",
             base, "--store", store], port, cwd=ROOT, env=_env())) for port in ports]
        a, b = urls

        class At:  # the site as seen through one process
            def __init__(self, url: str) -> None:
                self.base = url
                self.mcp = base + "/mcp"  # the resource both issue tokens for

        registered = requests.post(a + "/register", timeout=10, json={
            "client_name": "turns", "redirect_uris": [REDIRECT_URI],
            "application_type": "native", "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"]})
        client_id = registered.json()["client_id"]
        pkce = Pkce.new()
        url = authorize_url(At(b), client_id, pkce)  # type: ignore[arg-type]
        back = callback(Browser("alice").authorize(url))
        assert back["iss"] == base
        issued = requests.post(a + "/token", timeout=10, data={
            "grant_type": "authorization_code", "code": back["code"], "client_id": client_id,
            "redirect_uri": REDIRECT_URI, "code_verifier": pkce.verifier,
            "resource": base + "/mcp"}).json()

        class McpAt:
            def __init__(self, url: str) -> None:
                self.mcp = url + "/mcp"

        # A token A issued works at B's MCP endpoint (the keys are in the store).
        assert whoami_status(McpAt(b), issued["access_token"]) == 200  # type: ignore[arg-type]
        refresh = {"grant_type": "refresh_token", "client_id": client_id}
        rotated = requests.post(b + "/token", timeout=10,
                                data={**refresh, "refresh_token": issued["refresh_token"]})
        assert rotated.status_code == 200
        again = requests.post(a + "/token", timeout=10,
                              data={**refresh, "refresh_token": issued["refresh_token"]})
        assert again.json()["error"] == "invalid_grant"
        fresh = rotated.json()
        assert requests.post(b + "/token", timeout=10, data={
            **refresh, "refresh_token": fresh["refresh_token"]}).status_code == 400
        assert whoami_status(McpAt(a), fresh["access_token"]) == 401  # type: ignore[arg-type]
