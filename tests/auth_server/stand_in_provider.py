"""A stand-in OpenID Connect provider on loopback: discovery, an authorization endpoint
that signs in one user at once (as GitHub or Google would after their own login), a token
endpoint that checks the client's secret and the PKCE verifier, and userinfo."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode

from tests.serving import RunningServer


class StandInProvider:
    def __init__(self, *, client_id: str = "site", client_secret: str = "site-secret",
                 user: dict[str, Any] | None = None) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.user = user or {"sub": "carol-123", "name": "Carol"}
        self.codes: dict[str, dict[str, str]] = {}
        self.tokens: set[str] = set()
        self.token_requests = 0
        self.running = RunningServer(self.app)
        self.issuer = self.running.base

    def stop(self) -> None:
        self.running.stop()

    def _json(self, start: Any, status: str, body: Any) -> list[bytes]:
        start(status, [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    def app(self, environ: dict[str, Any], start: Any) -> list[bytes]:
        path = environ["PATH_INFO"]
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        if path == "/.well-known/openid-configuration":
            return self._json(start, "200 OK", {
                "issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token",
                "userinfo_endpoint": self.issuer + "/userinfo",
                "code_challenge_methods_supported": ["S256"]})
        if path == "/authorize":
            if query.get("client_id") != self.client_id or \
                    query.get("code_challenge_method") != "S256":
                return self._json(start, "400 Bad Request", {"error": "invalid_request"})
            code = secrets.token_urlsafe(16)
            self.codes[code] = query
            target = query["redirect_uri"] + "?" + urlencode({"code": code,
                                                              "state": query["state"]})
            start("302 Found", [("Location", target)])
            return [b""]
        if path == "/token":
            self.token_requests += 1
            length = int(environ.get("CONTENT_LENGTH") or 0)
            form = {k: v[0] for k, v in
                    parse_qs(environ["wsgi.input"].read(length).decode()).items()}
            basic = environ.get("HTTP_AUTHORIZATION", "")
            expected = "Basic " + base64.b64encode(
                f"{self.client_id}:{self.client_secret}".encode()).decode()
            asked = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(
                hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if basic != expected or asked is None or challenge != asked["code_challenge"]:
                return self._json(start, "400 Bad Request", {"error": "invalid_grant"})
            token = secrets.token_urlsafe(16)
            self.tokens.add(token)
            return self._json(start, "200 OK", {"access_token": token, "token_type": "Bearer",
                                                "expires_in": 600})
        if path == "/userinfo":
            token = environ.get("HTTP_AUTHORIZATION", "").removeprefix("Bearer ")
            if token not in self.tokens:
                return self._json(start, "401 Unauthorized", {"error": "invalid_token"})
            return self._json(start, "200 OK", self.user)
        return self._json(start, "404 Not Found", {})
