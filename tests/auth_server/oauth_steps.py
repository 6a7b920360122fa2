"""The OAuth steps by hand (``requests``), so the attack tests can change any one of them."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

from .conftest import Site
from .driver import Browser

REDIRECT_URI = "http://127.0.0.1:9/callback"
TIMEOUT = 10.0


def register(site: Site, **metadata: Any) -> str:
    body = {"client_name": "attack test", "redirect_uris": [REDIRECT_URI],
            "application_type": "native", "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], **metadata}
    answer = requests.post(site.base + "/register", json=body, timeout=TIMEOUT)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


@dataclass
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


def authorize_url(site: Site, client_id: str, pkce: Pkce | None, **extra: str) -> str:
    params = {"response_type": "code", "client_id": client_id,
              "redirect_uri": REDIRECT_URI, "state": "st-1", "scope": "mcp",
              "resource": site.mcp}
    if pkce is not None:
        params.update(code_challenge=pkce.challenge, code_challenge_method="S256")
    params.update(extra)
    return site.base + "/authorize?" + urlencode(params)


def callback(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def get_code(site: Site, client_id: str, pkce: Pkce, user: str = "alice") -> str:
    answer = callback(Browser(user).authorize(authorize_url(site, client_id, pkce)))
    assert answer["iss"] == site.base and answer["state"] == "st-1", answer
    return answer["code"]


def exchange(site: Site, client_id: str, code: str, verifier: str | None,
             **extra: str) -> requests.Response:
    form = {"grant_type": "authorization_code", "code": code, "client_id": client_id,
            "redirect_uri": REDIRECT_URI, "resource": site.mcp, **extra}
    if verifier is not None:
        form["code_verifier"] = verifier
    return requests.post(site.base + "/token", data=form, timeout=TIMEOUT)


def refresh(site: Site, client_id: str, refresh_token: str) -> requests.Response:
    return requests.post(site.base + "/token", timeout=TIMEOUT,
                         data={"grant_type": "refresh_token", "client_id": client_id,
                               "refresh_token": refresh_token})


def tokens(site: Site, user: str = "alice") -> tuple[str, dict[str, Any]]:
    """A fresh client and the tokens of a completed flow."""
    client_id = register(site)
    pkce = Pkce.new()
    answer = exchange(site, client_id, get_code(site, client_id, pkce, user), pkce.verifier)
    assert answer.status_code == 200, answer.text
    return client_id, answer.json()


def whoami_status(site: Site, access_token: str) -> int:
    """The HTTP status of a tools/call of whoami with ``access_token``."""
    from mcpsync import Client, UnauthorizedError

    headers = {"Authorization": f"Bearer {access_token}"}
    try:
        with Client.http(site.mcp, headers=headers, protocol_version="2026-07-28",
                         timeout=10) as client:
            client.call_tool("whoami", {})
    except UnauthorizedError as exc:
        return int(exc.status or 401)
    return 200
