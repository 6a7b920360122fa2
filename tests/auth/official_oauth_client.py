"""The official Python SDK (mcp 2.3.0) with its OAuth provider, calling one tool of a
protected server: ``official_oauth_client.py URL MODE TOOL JSON_ARGS``.

Run with the official SDK's venv python (``tests.interop.peers.official_python()``); it
imports only ``mcp``, ``httpx2`` and the standard library. The "browser" is an httpx2 GET
of the authorization URL (the test authorization server approves at once and redirects):
the redirect's ``code``/``state``/``iss`` go back to the SDK through its callback handler.
Prints one JSON object: ``{"ok": true, "text": ...}`` or ``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

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


async def main(url: str, mode: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    redirected: list[dict[str, list[str]]] = []

    async def redirect_handler(authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
            reply = await browser.get(authorization_url)
        redirected.append(parse_qs(urlsplit(reply.headers["location"]).query))

    async def callback_handler() -> AuthorizationCodeResult:
        query = redirected.pop()
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0],
                                       iss=(query.get("iss") or [None])[0])

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="official",
                                            token_endpoint_auth_method="none"),
        storage=Memory(), redirect_handler=redirect_handler,
        callback_handler=callback_handler)
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        version = {"legacy": "legacy", "modern": LATEST_MODERN_VERSION}[mode]
        async with mcp.Client(streamable_http_client(url, http_client=http), mode=version,
                              read_timeout_seconds=30) as client:
            result = await client.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return {"ok": not result.is_error, "text": text}


if __name__ == "__main__":
    try:
        report = asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3],
                                  json.loads(sys.argv[4])))
    except BaseException as exc:  # reported on stdout, not raised
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))
