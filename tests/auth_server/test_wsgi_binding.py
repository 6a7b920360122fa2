"""with_issuer in front of a WSGI app: the server's paths are its, every other request
reaches the app whole (its body unread)."""

from __future__ import annotations

from typing import Any

import requests

from mcpsync.auth.issuer import AuthorizationServer, SqlIssuerStore, with_issuer
from tests.serving import RunningServer

SECRET = "a-test-secret-that-is-long-enough-for-hmac-0123456789"


def echo(environ: dict[str, Any], start: Any) -> list[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length)
    start("200 OK", [("Content-Type", "text/plain")])
    return [environ["PATH_INFO"].encode() + b":" + body]


def test_other_paths_reach_the_app_with_their_body() -> None:
    holder: dict[str, Any] = {}
    with RunningServer(lambda e, s: holder["app"](e, s)) as running:
        server = AuthorizationServer(running.base, resources=[running.base + "/mcp"],
                                     store=SqlIssuerStore(":memory:"), secret_key=SECRET,
                                     current_user=lambda request: None,
                                     login_url=lambda request, next_url: "/login")
        holder["app"] = with_issuer(echo, server)
        for path in ("/mcp", "/token-other", "/authorize/x", "/"):
            answer = requests.post(running.base + path, data=b"payload", timeout=10)
            assert answer.text == f"{path}:payload"
        metadata = requests.get(running.base + "/.well-known/oauth-authorization-server",
                                timeout=10).json()
        assert metadata["issuer"] == running.base
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        assert metadata["authorization_response_iss_parameter_supported"] is True
        assert metadata["client_id_metadata_document_supported"] is True
        token = requests.post(running.base + "/token", data={"grant_type": "password"},
                              timeout=10)
        assert token.status_code == 400
        assert token.json()["error"] == "unsupported_grant_type"
