"""The official Python SDK (mcp 2.3.0) with its OAuth provider against the example site:
``official_client.py URL MODE REGISTRATION USER``, REGISTRATION ``dcr`` or a client ID
metadata document URL.

Run with the official SDK's venv python; it imports only ``mcp``, ``httpx2`` and the
standard library. The "browser" is an httpx2 client with cookies: it signs in on the
site's login form and presses Allow on the consent page (posting its hidden fields, the
CSRF token included); the redirect's ``code``/``state``/``iss`` go back to the SDK. After
the tool call the script refreshes the tokens and revokes them at the site's endpoints.
Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import sys
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import mcp
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp_types.version import LATEST_MODERN_VERSION

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def hidden(page: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in
            re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)}


async def browse(url: str, user: str) -> dict[str, list[str]]:
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
        here = url
        for _ in range(10):
            reply = await browser.get(here)
            if reply.status_code in (302, 303):
                here = urljoin(here, reply.headers["location"])
                continue
            if urlsplit(here).path == "/login":
                fields = hidden(reply.text)
                reply = await browser.post(here, data={**fields, "username": user,
                                                       "password": "secret"})
                here = urljoin(here, reply.headers["location"])
                continue
            reply = await browser.post(urljoin(here, "/authorize"),
                                       data={**hidden(reply.text), "decision": "allow"})
            return parse_qs(urlsplit(reply.headers["location"]).query)
    raise RuntimeError("too many redirects")


async def main(url: str, mode: str, registration: str, user: str) -> dict[str, Any]:
    redirected: list[dict[str, list[str]]] = []

    async def redirect_handler(authorization_url: str) -> None:
        redirected.append(await browse(authorization_url, user))

    async def callback_handler() -> AuthorizationCodeResult:
        query = redirected.pop()
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0],
                                       iss=(query.get("iss") or [None])[0])

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="official",
                                            token_endpoint_auth_method="none"),
        storage=storage, redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=None if registration == "dcr" else registration)
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        version = {"legacy": "legacy", "modern": LATEST_MODERN_VERSION}[mode]
        async with mcp.Client(streamable_http_client(url, http_client=http), mode=version,
                              read_timeout_seconds=30) as client:
            result = await client.call_tool("whoami", {})
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert storage.tokens is not None and storage.client is not None
    base = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    client_id = storage.client.client_id
    async with httpx2.AsyncClient(timeout=10) as plain:
        refreshed = await plain.post(base + "/token", data={
            "grant_type": "refresh_token", "client_id": client_id,
            "refresh_token": storage.tokens.refresh_token})
        fresh = refreshed.json()
        revoked = await plain.post(base + "/revoke", data={
            "token": fresh.get("refresh_token", ""), "client_id": client_id})
        after = await plain.post(base + "/token", data={
            "grant_type": "refresh_token", "client_id": client_id,
            "refresh_token": fresh.get("refresh_token", "")})
    return {"ok": not result.is_error, "text": text, "client_id": client_id,
            "refreshed": refreshed.status_code, "revoked": revoked.status_code,
            "after_revocation": after.status_code}


if __name__ == "__main__":
    try:
        report = asyncio.run(main(*sys.argv[1:5]))
    except BaseException as exc:  # reported on stdout, not raised
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))
