"""A token endpoint that fails: it answers 5xx, a body that is not JSON, or JSON without
``access_token``. The client-credentials flow (and so every grant: they share the token
request) raises :class:`TokenRequestError` at once, naming the endpoint and what was wrong,
without the secret; never a hang, a ``KeyError`` or a ``JSONDecodeError`` from inside.

The endpoint is a real WSGI server on a real socket that the real test authorization
server's metadata points at.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import Client, OAuth, TokenRequestError
from tests.helpers import WAIT, require_module
from tests.serving import RunningServer

from .authserver import AuthServer

require_module("jwt")

SECRET = "svc-secret-5e1f"

Reply = tuple[str, str, bytes]  # status line, content type, body

FAILURES: dict[str, Reply] = {
    "503": ("503 Service Unavailable", "text/html", b"<html>upstream down</html>"),
    "500-json": ("500 Internal Server Error", "application/json",
                 json.dumps({"message": "boom"}).encode()),
    "not-json": ("200 OK", "application/json", b"<html>a login page</html>"),
    "no-access-token": ("200 OK", "application/json",
                        json.dumps({"token_type": "Bearer", "expires_in": 3600}).encode()),
    "access-token-not-a-string": ("200 OK", "application/json",
                                  json.dumps({"access_token": 42,
                                              "token_type": "Bearer"}).encode()),
}


def endpoint(reply: Reply, seen: list[bytes]) -> Callable[..., Any]:
    status, content_type, body = reply

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        seen.append(environ["wsgi.input"].read(length))
        start_response(status, [("Content-Type", content_type),
                                ("Content-Length", str(len(body)))])
        return [body]

    return app


@pytest.fixture(params=list(FAILURES))
def failure(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def failing_token_endpoint(auth_server: AuthServer, failure: str
                           ) -> Iterator[tuple[str, list[bytes]]]:
    seen: list[bytes] = []
    with RunningServer(endpoint(FAILURES[failure], seen)) as running:
        url = f"{running.base}/token"
        auth_server.metadata_overrides["token_endpoint"] = url
        yield url, seen


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_failing_token_endpoint_is_a_clear_token_request_error(
        auth_server: AuthServer, protect: Any, failing_token_endpoint: tuple[str, list[bytes]],
        version: str, failure: str):
    url, seen = failing_token_endpoint
    status = FAILURES[failure][0].split()[0]
    auth_server.clients["svc"] = SECRET
    mcp = protect()
    oauth = OAuth.client_credentials("svc", client_secret=SECRET)
    started = time.monotonic()
    with pytest.raises(TokenRequestError) as caught:
        Client.http(mcp.url, auth=oauth, protocol_version=version, timeout=WAIT)
    assert time.monotonic() - started < WAIT / 2
    message = str(caught.value)
    assert seen, "the token endpoint was never asked"
    assert url in message or "token endpoint" in message, message
    assert SECRET not in message, message
    assert "Traceback" not in message and "KeyError" not in message, message
    assert "JSONDecodeError" not in message and "Expecting value" not in message, message
    assert f"HTTP {status}" in message, message
