"""A token naming neither ``sub`` nor ``client_id`` is never one principal shared by all
such tokens (issue 25, #4). By default it is refused (401 ``invalid_token`` with an
``error_description`` saying why); with ``anonymous_principal="per-token"`` each such
token is a principal of its own: it cannot use another's session, nor see or cancel
another's task. Both verifiers, over real HTTP; RFC 7662 makes both claims optional in an
introspection answer."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from mcpsync import IntrospectionVerifier, JwtVerifier, ResourceServer
from tests.helpers import require_module
from tests.serving import RunningServer
from tests.tasks.peers import Peer
from tests.tasks.task_server import make_server

from .authserver import AuthServer, Issued
from .test_resource_server import WAIT, _initialize, _session_headers, bearer, challenge_of

require_module("jwt")

KINDS = ["jwt", "introspection"]
#: The error_description of the refusal (mcpsync.auth.server.verify.NO_PRINCIPAL).
NO_PRINCIPAL = "the access token names no subject (sub) or client (client_id)"


class Endpoint:
    """The task server at ``url``, protected by a verifier of ``kind`` for ``auth``'s
    tokens; ``token(named=...)`` mints one it accepts (save for what it names)."""

    def __init__(self, auth: AuthServer, kind: str, **verifier_options: Any) -> None:
        self.auth = auth
        self.kind = kind
        holder: list[Any] = []
        self.running = RunningServer(lambda environ, start: holder[0](environ, start))
        self.url = self.running.base + "/mcp"
        verifier: Any
        if kind == "jwt":
            verifier = JwtVerifier(auth.jwks_url, issuer=auth.issuer, audience=self.url,
                                   **verifier_options)
        else:
            auth.clients["the-resource"] = "its-secret"
            verifier = IntrospectionVerifier(auth.issuer + "/introspect",
                                             client_id="the-resource",
                                             client_secret="its-secret", issuer=auth.issuer,
                                             audience=self.url, **verifier_options)
        self.server = make_server()
        self.app = self.server.wsgi_app(path="/mcp", auth=ResourceServer(
            verifier, resource=self.url, authorization_servers=[auth.issuer]))
        holder.append(self.app)

    def token(self, named: bool = False) -> str:
        who = {"subject": "alice", "client_id": "c1"} if named else {
            "subject": None, "client_id": None}
        if self.kind == "jwt":
            return self.auth.mint(audience=self.url, **who)
        token = "at-" + secrets.token_urlsafe(16)
        self.auth.introspection_claims = {} if named else {"sub": None, "client_id": None}
        self.auth.tokens[token] = Issued("c1", [], self.url, self.auth.issuer)
        return token

    def stop(self) -> None:
        self.running.stop()
        self.server.close_tasks()
        self.app.close()


@pytest.fixture
def endpoint(jwt_auth: AuthServer) -> Iterator[Callable[..., Endpoint]]:
    started: list[Endpoint] = []

    def start(kind: str, **options: Any) -> Endpoint:
        if kind == "introspection":
            jwt_auth.jwt_tokens = False
        started.append(Endpoint(jwt_auth, kind, **options))
        return started[-1]

    yield start
    for item in started:
        item.stop()


def _ping(url: str, session: str, token: str) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    return requests.post(url, data=body, headers=_session_headers(session, token),
                         timeout=WAIT).status_code


@pytest.mark.parametrize("kind", KINDS)
def test_a_token_naming_nobody_is_refused_with_a_description(endpoint: Any,
                                                             kind: str) -> None:
    mcp = endpoint(kind)
    anonymous = mcp.token()
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    response = requests.post(mcp.url, json=body, timeout=WAIT, headers={
        "Accept": "application/json, text/event-stream", **bearer(anonymous)})
    assert response.status_code == 401
    assert challenge_of(response).startswith(
        f'Bearer error="invalid_token", error_description="{NO_PRINCIPAL}"')
    assert anonymous not in response.text + str(response.headers)
    named = mcp.token(named=True)
    assert _ping(mcp.url, _initialize(mcp.url, named), named) == 200


@pytest.mark.parametrize("kind", KINDS)
def test_per_token_principals_do_not_share_sessions(endpoint: Any, kind: str) -> None:
    mcp = endpoint(kind, anonymous_principal="per-token")
    first, second = mcp.token(), mcp.token()
    session = _initialize(mcp.url, first)
    assert _ping(mcp.url, session, second) == 404  # as for an unknown id
    assert requests.delete(mcp.url, headers=_session_headers(session, second),
                           timeout=WAIT).status_code == 404
    assert _ping(mcp.url, session, first) == 200
    own = _initialize(mcp.url, second)
    assert _ping(mcp.url, own, second) == 200 and _ping(mcp.url, own, first) == 404


@pytest.mark.parametrize("kind", KINDS)
def test_per_token_principals_do_not_share_tasks(endpoint: Any, kind: str) -> None:
    mcp = endpoint(kind, anonymous_principal="per-token")
    first, second = mcp.token(), mcp.token()
    peer = Peer("http", "modern", http=mcp.running)
    task_id = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 30}},
                          headers=bearer(first))["taskId"]
    for method in ("tasks/get", "tasks/cancel"):
        refused = peer.error(method, {"taskId": task_id}, headers=bearer(second))
        assert refused["code"] == -32602, (method, refused)
    assert peer.result("tasks/get", {"taskId": task_id},
                       headers=bearer(first))["status"] == "working"
    peer.result("tasks/cancel", {"taskId": task_id}, headers=bearer(first))


def test_the_verifiers_refuse_an_unknown_mode(jwt_auth: AuthServer) -> None:
    with pytest.raises(ValueError, match="anonymous_principal"):
        JwtVerifier(jwt_auth.jwks_url, issuer=jwt_auth.issuer, audience="https://rs.example",
                    anonymous_principal="shared")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="anonymous_principal"):
        IntrospectionVerifier(jwt_auth.issuer + "/introspect",
                              anonymous_principal="shared")  # type: ignore[arg-type]


def test_a_custom_verifier_s_nameless_token_is_refused_too() -> None:
    # The resource server itself refuses a token that identifies nobody, whatever
    # verifier made it: its principal would be shared.
    from mcpsync import AccessToken

    class Lax:
        def verify(self, token: str) -> AccessToken | None:
            return AccessToken(None, None, claims={"iss": "https://as.example"})

    resource = ResourceServer(Lax(), resource="https://rs.example/mcp",
                              authorization_servers=["https://as.example"])
    refusal = resource.authenticate("Bearer anything")
    assert not isinstance(refusal, AccessToken)
    assert refusal.status.startswith("401") and NO_PRINCIPAL in refusal.challenge
