"""A token verifier of the user's own that raises (issue 41): a bug in the server, not a
bad token. As the official SDKs answer it (TypeScript: 500 ``server_error``; Python: the
exception becomes a 500), the request gets a 500 with a JSON-RPC internal error and no
``WWW-Authenticate`` challenge (RFC 6750's ``invalid_token`` is for a token that is
expired, revoked or malformed, which would send the client to get a new one for nothing),
and the log has the exception's message and traceback with the token redacted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import AccessToken, InvalidTokenError, ResourceServer, Server
from tests.http.raw import post_modern
from tests.serving import RunningServer

TOKEN = "secret-token-value-0123456789"


class WrongAccessTokenCall:
    """The newcomer's verifier: ``AccessToken`` called with a field it does not have."""

    def verify(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, subject="ada")  # type: ignore[call-arg]


class QuotesTheToken:
    def verify(self, token: str) -> AccessToken | None:
        raise ValueError(f"cannot parse {token} (bad segment)")


class Refuses:
    def verify(self, token: str) -> AccessToken | None:
        raise InvalidTokenError("the token is revoked")


@pytest.fixture
def protected() -> Iterator[Any]:
    """``protected(verifier)``: the URL of a server guarded by ``verifier``."""
    running: list[tuple[RunningServer, Any]] = []

    def start(verifier: Any) -> str:
        holder: list[Any] = []
        server = RunningServer(lambda environ, start: holder[0](environ, start))
        url = server.base + "/mcp"
        auth = ResourceServer(verifier, resource=url,
                              authorization_servers=["https://as.example"])
        holder.append(Server("guarded", request_state_key="k").wsgi_app(path="/mcp",
                                                                         auth=auth))
        running.append((server, holder[0]))
        return url

    yield start
    for server, app in running:
        server.stop()
        app.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("verifier", [WrongAccessTokenCall, QuotesTheToken])
def test_a_verifier_that_raises_is_a_server_error_not_a_bad_token(protected, caplog,
                                                                  verifier):
    caplog.set_level(logging.DEBUG)
    url = protected(verifier())
    response = post_modern(url, "tools/list", {}, headers=bearer(TOKEN))
    assert response.status_code == 500
    assert "WWW-Authenticate" not in response.headers  # nothing to fix on the client side
    error = response.json()["error"]
    assert error["code"] == -32603
    assert "could not check the access token" in error["message"]
    assert TOKEN not in response.text
    # The log says what went wrong, where, without the token.
    assert TOKEN not in caplog.text
    assert "Traceback" in caplog.text
    assert verifier.__name__ in caplog.text  # the frame of the user's verify()
    if verifier is WrongAccessTokenCall:
        assert "unexpected keyword argument 'token'" in caplog.text
    else:
        assert "cannot parse [token redacted] (bad segment)" in caplog.text


def test_an_invalid_token_error_is_still_a_401_with_its_description(protected):
    url = protected(Refuses())
    response = post_modern(url, "tools/list", {}, headers=bearer(TOKEN))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert 'error_description="the token is revoked"' in response.headers["WWW-Authenticate"]
