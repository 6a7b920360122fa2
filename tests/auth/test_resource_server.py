"""mcpsync protecting itself: ``server.wsgi_app(auth=ResourceServer(JwtVerifier(...)))``
served on a real socket, tokens minted by the loopback authorization server
(``authserver.AuthServer``, RS256 JWTs from its JWKS), and mcpsync's own ``OAuth`` client
end to end in both eras."""

from __future__ import annotations

import itertools
import json
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
import requests

from mcpsync import (
    AccessToken,
    Client,
    HandlerContext,
    InsufficientScopeError,
    IntrospectionVerifier,
    JwtVerifier,
    MCPError,
    ResourceServer,
    Server,
)
from mcpsync.http import FileSessionStore
from tests.helpers import require_module
from tests.http.raw import BOTH, LEGACY, WAIT, SseReader, answer_of, post_modern
from tests.serving import RunningServer

from .authserver import AuthServer
from .conftest import headless
from .scoped_server import add_scoped_items

require_module("jwt")

ERAS = ["2025-11-25", "2026-07-28"]


def make_server() -> Server:
    server = Server("protected", request_state_key="test-key")

    @server.tool()
    def whoami(ctx: HandlerContext) -> str:
        """Who the access token says is calling."""
        token = ctx.auth
        assert isinstance(token, AccessToken)
        assert "authorization" not in ctx.transport.headers  # the raw token is not handed on
        return f"{token.subject}/{token.client_id}/{' '.join(sorted(token.scopes))}"

    @server.tool()
    def confirm(ctx: HandlerContext) -> str:
        """Asks the user (a 2026-07-28 multi round-trip request)."""
        form = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        return "confirmed" if ctx.elicit("sure?", form).content.get("ok") else "no"

    @server.tool(scopes=["files:write"])
    def write(text: str) -> str:
        """Needs files:write."""
        return "wrote " + text

    add_scoped_items(server)
    return server


class SelfProtected:
    """An mcpsync server at ``/mcp`` protecting itself with tokens of ``auth``."""

    def __init__(self, auth: AuthServer, *, workers: int = 1,
                 session_store: Any = None, **options: Any) -> None:
        # ``workers`` apps behind one address, taken in turn: a round-robin balancer.
        self._apps: list[Any] = []
        turns = itertools.count()
        self.server = RunningServer(
            lambda environ, start: self._apps[next(turns) % len(self._apps)](environ, start))
        self.url = self.server.base + "/mcp"
        self.prm_url = self.server.base + "/.well-known/oauth-protected-resource/mcp"
        self.resource = ResourceServer(
            JwtVerifier(auth.jwks_url, issuer=auth.issuer, audience=self.url, leeway=5,
                        refresh_cooldown=0),
            resource=self.url, authorization_servers=[auth.issuer],
            scopes_supported=["mcp", "files:write"], **options)
        self._apps = [make_server().wsgi_app(path="/mcp", auth=self.resource,
                                             session_store=session_store)
                      for _ in range(workers)]

    def stop(self) -> None:
        self.server.stop()
        for app in self._apps:
            app.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def challenge_of(response: requests.Response) -> str:
    return response.headers.get("WWW-Authenticate", "")


# -- metadata and challenges ------------------------------------------------------------


def test_protected_resource_metadata_at_both_well_known_paths(protected: Any,
                                                              jwt_auth: AuthServer):
    mcp = protected()
    for url in (mcp.prm_url, mcp.server.base + "/.well-known/oauth-protected-resource"):
        response = requests.get(url, timeout=WAIT)
        assert response.status_code == 200
        assert response.json() == {"resource": mcp.url,
                                   "authorization_servers": [jwt_auth.issuer],
                                   "bearer_methods_supported": ["header"],
                                   "scopes_supported": ["mcp", "files:write"]}


def test_no_token_is_a_401_pointing_at_the_metadata(protected: Any):
    mcp = protected(required_scopes=["mcp"])
    response = post_modern(mcp.url, "tools/list", {})
    assert response.status_code == 401
    assert challenge_of(response) == (f'Bearer scope="mcp", resource_metadata="{mcp.prm_url}"')
    assert response.json()["error"]["code"] == -32600  # a JSON-RPC body, not HTML


@pytest.mark.parametrize("case", ["wrong_audience", "expired", "wrong_issuer", "other_key",
                                  "unknown_kid", "garbage", "other_resource"])
def test_bad_tokens_are_refused_with_invalid_token(protected: Any, jwt_auth: AuthServer,
                                                   case: str):
    from cryptography.hazmat.primitives.asymmetric import rsa

    mcp = protected()
    tokens = {
        "wrong_audience": lambda: jwt_auth.mint(audience="https://elsewhere.example/mcp"),
        "other_resource": lambda: jwt_auth.mint(audience=mcp.server.base + "/other"),
        "expired": lambda: jwt_auth.mint(audience=mcp.url, expires_in=-60),
        "wrong_issuer": lambda: jwt_auth.mint(audience=mcp.url, issuer="https://evil.example"),
        "other_key": lambda: jwt_auth.mint(audience=mcp.url, key=rsa.generate_private_key(
            public_exponent=65537, key_size=2048)),
        "unknown_kid": lambda: jwt_auth.mint(audience=mcp.url, kid="nope"),
        "garbage": lambda: "not.a.jwt",
    }
    token = tokens[case]()
    response = post_modern(mcp.url, "tools/list", {}, headers=bearer(token))
    assert response.status_code == 401
    assert challenge_of(response).startswith('Bearer error="invalid_token"')
    assert f'resource_metadata="{mcp.prm_url}"' in challenge_of(response)
    assert token not in response.text and token not in str(response.headers)


def test_a_valid_token_reaches_the_handler_as_ctx_auth(protected: Any, jwt_auth: AuthServer):
    mcp = protected()
    token = jwt_auth.mint(audience=mcp.url, scopes=["mcp"], subject="bob", client_id="c9")
    response = post_modern(mcp.url, "tools/call", {"name": "whoami", "arguments": {}},
                           headers=bearer(token))
    assert response.status_code == 200, response.text
    assert answer_of(response)["result"]["content"][0]["text"] == "bob/c9/mcp"


def test_keys_are_refetched_when_the_authorization_server_rotates(protected: Any,
                                                                  jwt_auth: AuthServer):
    mcp = protected()
    first = jwt_auth.mint(audience=mcp.url)
    assert post_modern(mcp.url, "tools/list", {}, headers=bearer(first)).status_code == 200
    fetched = jwt_auth.count("/jwks")
    assert post_modern(mcp.url, "tools/list", {}, headers=bearer(first)).status_code == 200
    assert jwt_auth.count("/jwks") == fetched  # cached
    jwt_auth.rotate_key()
    second = jwt_auth.mint(audience=mcp.url)
    assert post_modern(mcp.url, "tools/list", {}, headers=bearer(second)).status_code == 200
    assert jwt_auth.count("/jwks") == fetched + 1


def test_opaque_tokens_through_introspection(jwt_auth: AuthServer):
    """RFC 7662: the resource server asks the authorization server about each token."""
    jwt_auth.jwt_tokens = False
    jwt_auth.clients["the-resource"] = "its-secret"
    holder: list[Any] = []
    running = RunningServer(lambda environ, start: holder[0](environ, start))
    url = running.base + "/mcp"
    verifier = IntrospectionVerifier(jwt_auth.issuer + "/introspect", client_id="the-resource",
                                     client_secret="its-secret", issuer=jwt_auth.issuer,
                                     audience=url)
    resource = ResourceServer(verifier, resource=url, authorization_servers=[jwt_auth.issuer])
    holder.append(make_server().wsgi_app(path="/mcp", auth=resource))
    try:
        with Client.http(url, auth=headless(), protocol_version="2026-07-28",
                         timeout=30.0) as client:
            assert client.call_tool("whoami", {}).content[0].text.startswith("user-")
        [token] = [t for t, issued in jwt_auth.tokens.items() if issued.resource == url]
        assert jwt_auth.count("/introspect") >= 1
        assert post_modern(url, "tools/list", {}, headers=bearer("at-unknown")).status_code == 401
        jwt_auth.tokens[token].resource = "https://elsewhere.example/mcp"  # another audience
        assert post_modern(url, "tools/list", {}, headers=bearer(token)).status_code == 401
        wrong_secret = IntrospectionVerifier(jwt_auth.issuer + "/introspect",
                                             client_id="the-resource", client_secret="nope")
        assert wrong_secret.verify(token) is None
    finally:
        running.stop()
        holder[0].close()


def test_a_verifier_that_raises_is_a_500_and_the_token_is_not_logged(
        caplog: pytest.LogCaptureFixture):
    class Broken:
        def verify(self, token: str) -> AccessToken | None:
            raise RuntimeError(f"cannot parse {token}")

    caplog.set_level(logging.DEBUG)
    holder: list[Any] = []
    running = RunningServer(lambda environ, start: holder[0](environ, start))
    url = running.base + "/mcp"
    resource = ResourceServer(Broken(), resource=url,
                              authorization_servers=["https://as.example"])
    holder.append(make_server().wsgi_app(path="/mcp", auth=resource))
    try:
        response = post_modern(url, "tools/list", {}, headers=bearer("secret-token-value"))
        assert response.status_code == 500  # a bug in the verifier, not a bad token
        assert response.headers["Content-Type"].startswith("application/json")
        assert "secret-token-value" not in caplog.text + response.text
        assert "RuntimeError" in caplog.text
    finally:
        running.stop()
        holder[0].close()

# -- per-tool scopes --------------------------------------------------------------------


def test_a_tool_needing_a_scope_is_a_403_insufficient_scope(protected: Any,
                                                            jwt_auth: AuthServer):
    mcp = protected()
    token = jwt_auth.mint(audience=mcp.url, scopes=["mcp"])
    response = post_modern(mcp.url, "tools/call", {"name": "write", "arguments": {"text": "x"}},
                           headers=bearer(token))
    assert response.status_code == 403
    assert challenge_of(response) == ('Bearer error="insufficient_scope", scope="files:write", '
                                      f'resource_metadata="{mcp.prm_url}"')
    good = jwt_auth.mint(audience=mcp.url, scopes=["mcp", "files:write"])
    response = post_modern(mcp.url, "tools/call", {"name": "write", "arguments": {"text": "x"}},
                           headers=bearer(good))
    assert answer_of(response)["result"]["content"][0]["text"] == "wrote x"


def test_a_scoped_tool_off_http_is_a_json_rpc_error_unless_the_principal_has_it():
    server = make_server()
    with Client.memory(server) as client:
        with pytest.raises(MCPError, match="files:write") as info:
            client.call_tool("write", {"text": "x"})
        assert info.value.data == {"error": "insufficient_scope", "scope": "files:write"}

    def grant(message: Any, next_: Any) -> Any:  # an auth layer of the host's own
        from mcpsync.dispatch.inbound import current_transport

        transport = current_transport()
        assert transport is not None
        transport.auth = AccessToken("me", "host", frozenset({"files:write"}))
        return next_(message)

    server.recv_middleware.append(grant)
    with Client.memory(server) as client:
        assert client.call_tool("write", {"text": "y"}).content[0].text == "wrote y"


def test_tools_a_principal_may_not_call_are_hidden_only_when_asked(protected: Any,
                                                                   jwt_auth: AuthServer):
    mcp = protected()
    reader = jwt_auth.mint(audience=mcp.url, scopes=["mcp"])
    writer = jwt_auth.mint(audience=mcp.url, scopes=["mcp", "files:write"])

    def names(token: str) -> tuple[set[str], Any]:
        result = answer_of(post_modern(mcp.url, "tools/list", {}, headers=bearer(token)))
        return {tool["name"] for tool in result["result"]["tools"]}, result["result"].get(
            "cacheScope")

    assert "write" in names(reader)[0]  # the default: listed, a call is a 403 to step up
    mcp._apps[0].server.tools.hide_unauthorized = True
    assert names(reader) == ({"whoami", "confirm"}, "private")
    assert names(writer) == ({"whoami", "confirm", "write"}, "private")

# -- handshake-era sessions are bound to their principal -------------------------------


def _initialize(url: str, token: str) -> str:
    response = requests.post(url, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}},
        headers={"Accept": BOTH, **bearer(token)}, timeout=WAIT)
    assert response.status_code == 200, response.text
    return response.headers["Mcp-Session-Id"]


def _session_headers(session_id: str, token: str) -> dict[str, str]:
    return {"Accept": BOTH, "Content-Type": "application/json", "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": LEGACY, **bearer(token)}


def test_another_principal_cannot_use_a_session(protected: Any, jwt_auth: AuthServer):
    mcp = protected()
    alice = jwt_auth.mint(audience=mcp.url, subject="alice")
    mallory = jwt_auth.mint(audience=mcp.url, subject="mallory")
    session = _initialize(mcp.url, alice)
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    stolen = requests.post(mcp.url, data=ping, headers=_session_headers(session, mallory),
                           timeout=WAIT)
    assert stolen.status_code == 404  # as for an unknown id: it learns nothing
    assert requests.get(mcp.url, headers=_session_headers(session, mallory),
                        timeout=WAIT).status_code == 404
    assert requests.delete(mcp.url, headers=_session_headers(session, mallory),
                           timeout=WAIT).status_code == 404
    own = requests.post(mcp.url, data=ping, headers=_session_headers(session, alice),
                        timeout=WAIT)
    assert own.status_code == 200, own.text
    # A fresh token of the same principal (a refresh) keeps the session.
    again = jwt_auth.mint(audience=mcp.url, subject="alice")
    assert requests.post(mcp.url, data=ping, headers=_session_headers(session, again),
                         timeout=WAIT).status_code == 200


def test_a_shared_session_is_served_by_every_worker_to_its_owner_only(
        protected: Any, jwt_auth: AuthServer, tmp_path: Path):
    # Two workers, one shared record: the record carries the owner's key, so the worker
    # that did not see initialize serves alice (it used to refuse her: 404) and still
    # refuses mallory, who cannot end the session on either worker either.
    mcp = protected(workers=2, session_store=FileSessionStore(tmp_path))
    alice = jwt_auth.mint(audience=mcp.url, subject="alice")
    mallory = jwt_auth.mint(audience=mcp.url, subject="mallory")
    session = _initialize(mcp.url, alice)  # worker 0
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for _ in range(2):  # workers 1 and 0, then 1 and 0 again
        own = requests.post(mcp.url, data=ping, headers=_session_headers(session, alice),
                            timeout=WAIT)
        assert own.status_code == 200, own.text
        stolen = requests.post(mcp.url, data=ping,
                               headers=_session_headers(session, mallory), timeout=WAIT)
        assert stolen.status_code == 404
    for _ in range(2):
        assert requests.delete(mcp.url, headers=_session_headers(session, mallory),
                               timeout=WAIT).status_code == 404
    assert requests.delete(mcp.url, headers=_session_headers(session, alice),
                           timeout=WAIT).status_code in (200, 204)


def test_the_2024_11_05_transport_is_protected_and_bound_too(protected: Any,
                                                            jwt_auth: AuthServer):
    mcp = protected()
    alice = jwt_auth.mint(audience=mcp.url, subject="alice", scopes=["mcp"])
    mallory = jwt_auth.mint(audience=mcp.url, subject="mallory", scopes=["mcp", "files:write"])
    sse = mcp.server.base + "/sse"
    assert requests.get(sse, headers={"Accept": "text/event-stream"},
                        timeout=WAIT).status_code == 401
    stream = requests.get(sse, headers={"Accept": "text/event-stream", **bearer(alice)},
                          stream=True, timeout=WAIT)
    try:
        reader = SseReader(stream)
        endpoint = reader.next_event()
        assert endpoint is not None and endpoint["event"] == "endpoint"
        post_url = urljoin(sse, endpoint["data"])
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                 "clientInfo": {"name": "old", "version": "0"}}}
        assert requests.post(post_url, json=initialize, headers=bearer(mallory),
                             timeout=WAIT).status_code == 404
        assert requests.post(post_url, json=initialize, headers=bearer(alice),
                             timeout=WAIT).status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "write", "arguments": {"text": "x"}}}
        refused = requests.post(post_url, json=call, headers=bearer(alice), timeout=WAIT)
        assert refused.status_code == 403
        assert 'error="insufficient_scope", scope="files:write"' in challenge_of(refused)
        for method, params, scope in (
                ("resources/read", {"uri": "notes://private/plans"}, "notes:read"),
                ("resources/subscribe", {"uri": "notes://secret"}, "notes:read"),
                ("prompts/get", {"name": "report", "arguments": {"quarter": "Q1"}},
                 "reports")):
            refused = requests.post(post_url, headers=bearer(alice), timeout=WAIT, json={
                "jsonrpc": "2.0", "id": 3, "method": method, "params": params})
            assert refused.status_code == 403, method
            assert f'error="insufficient_scope", scope="{scope}"' in challenge_of(refused)
    finally:
        stream.close()


def test_a_request_state_is_bound_to_the_principal_it_was_issued_to(protected: Any,
                                                                    jwt_auth: AuthServer):
    mcp = protected()
    alice = jwt_auth.mint(audience=mcp.url, subject="alice")
    mallory = jwt_auth.mint(audience=mcp.url, subject="mallory")
    caps = {"elicitation": {}}
    from tests.http.raw import envelope, modern_headers

    def call(token: str, extra: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "confirm", "arguments": {}, **extra,
                           "_meta": envelope(capabilities=caps)}}
        response = requests.post(mcp.url, data=json.dumps(body), timeout=WAIT,
                                 headers={**modern_headers("tools/call", "confirm"),
                                          **bearer(token)})
        return answer_of(response)

    first = call(alice, {})["result"]
    assert first["resultType"] == "input_required"
    [key] = first["inputRequests"]
    retry = {"requestState": first["requestState"],
             "inputResponses": {key: {"action": "accept", "content": {"ok": True}}}}
    stolen = call(mallory, retry)
    assert stolen["error"]["code"] == -32602, stolen
    assert call(alice, retry)["result"]["content"][0]["text"] == "confirmed"

# -- mcpsync's OAuth client against mcpsync protecting itself ---------------------------


@pytest.mark.parametrize("version", ERAS)
def test_the_oauth_client_end_to_end(protected: Any, jwt_auth: AuthServer, version: str,
                                     caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)
    mcp = protected(required_scopes=["mcp"])
    with Client.http(mcp.url, auth=headless(), protocol_version=version,
                     timeout=30.0) as client:
        assert client.call_tool("whoami", {}).content[0].text.endswith("/mcp")
        # Step-up: the 403 names files:write, the client authorizes again and retries.
        assert client.call_tool("write", {"text": "z"}).content[0].text == "wrote z"
    assert jwt_auth.count("/authorize") == 2
    for issued in jwt_auth.tokens:
        assert issued not in caplog.text


def test_step_up_that_never_gets_the_scope_is_bounded(protected: Any, jwt_auth: AuthServer):
    mcp = protected()
    # The authorization server grants only what was asked... but drops files:write.
    original = jwt_auth.mint

    def stingy(**kw: Any) -> str:
        kw["scopes"] = [s for s in kw.get("scopes") or [] if s != "files:write"]
        return original(**kw)

    jwt_auth.mint = stingy  # type: ignore[method-assign]
    with Client.http(mcp.url, auth=headless(), protocol_version="2026-07-28",
                     timeout=30.0) as client, pytest.raises(InsufficientScopeError):
        client.call_tool("write", {"text": "z"})


# -- docs/auth.md, "Protecting a server": its examples run ------------------------------


def _doc_blocks() -> list[str]:
    doc = Path(__file__).resolve().parents[2] / "docs" / "auth.md"
    section = doc.read_text().split("\n## Protecting a server")[1]
    # A runnable block runs on its own (tests/test_docs_runnable.py), not in these.
    section = re.sub(r"<!-- runnable: [\w-]+ -->.*?<!-- /runnable -->", "", section,
                     flags=re.S)
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("mounted", [False, True])
def test_the_docs_example_protects_a_server(jwt_auth: AuthServer, mounted: bool):
    blocks = _doc_blocks()
    assert len(blocks) == 4  # the server, its mount, a JwtVerifier, scoped items
    holder: list[Any] = []
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    running = RunningServer(lambda environ, start: holder[0](environ, start))
    try:
        source = "\n".join(blocks[: 2 if mounted else 1])
        source = (source.replace("https://mcp.example.com/mcp", running.base + "/mcp")
                  .replace("https://auth.example.com", jwt_auth.issuer))
        exec(compile(source, "docs/auth.md", "exec"), namespace)
        holder.append(namespace["flask_app"] if mounted else namespace["app"])
        prm = requests.get(running.base + "/.well-known/oauth-protected-resource/mcp",
                           timeout=WAIT)
        assert prm.json()["resource"] == running.base + "/mcp"
        with Client.http(running.base + "/mcp", auth=headless(),
                         protocol_version="2026-07-28", timeout=30.0) as client:
            assert client.call_tool("whoami", {}).content[0].text.startswith("user-")
            assert client.call_tool("save", {"name": "a", "text": "hi"}).content[0].text == (
                "saved 2 characters to a")
    finally:
        running.stop()
        if "flask_app" in namespace:
            namespace["flask_app"].wsgi_app.mounts["/mcp"].close()
        if "app" in namespace:
            namespace["app"].close()


def test_the_docs_examples_of_a_bounded_jwks_and_scoped_items(jwt_auth: AuthServer):
    server_block, _, verifier_block, scoped_block = _doc_blocks()
    holder: list[Any] = []
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    running = RunningServer(lambda environ, start: holder[0](environ, start))
    url = running.base + "/mcp"
    try:
        source = "\n".join([server_block, verifier_block, scoped_block])
        source = (source.replace("https://mcp.example.com/mcp", url)
                  .replace("https://auth.example.com/jwks", jwt_auth.jwks_url)
                  .replace("https://auth.example.com", jwt_auth.issuer))
        exec(compile(source, "docs/auth.md", "exec"), namespace)
        holder.append(namespace["app"])
        assert namespace["verifier"].verify(jwt_auth.mint(audience=url)) is not None
        writer = jwt_auth.mint(audience=url, scopes=["files:write"])
        refused = post_modern(url, "resources/read", {"uri": "files://a"},
                              headers=bearer(writer))
        assert refused.status_code == 403
        assert 'error="insufficient_scope", scope="files:read"' in challenge_of(refused)
        listed = answer_of(post_modern(url, "prompts/list", {}, headers=bearer(writer)))
        assert listed["result"]["prompts"] == []  # hidden: the token may not get it
        with Client.http(url, auth=headless(),
                         protocol_version="2026-07-28", timeout=30.0) as client:
            assert client.read_resource("files://a").contents[0].text == "the text of a"
            assert [p.name for p in client.list_prompts()] == ["summarize"]
    finally:
        running.stop()
        if "app" in namespace:
            namespace["app"].close()


# -- the official SDK's OAuth client against mcpsync protecting itself ------------------


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_the_official_sdk_oauth_client_calls_a_protected_tool(protected: Any, mode: str):
    import subprocess
    import sys

    from tests.interop.peers import official_python, require

    mcp = protected(required_scopes=["mcp"])
    python = require(official_python)
    script = str(Path(__file__).with_name("official_oauth_client.py"))
    proc = subprocess.run([python, script, mcp.url, mode, "whoami", "{}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ok"], (report, proc.stderr[-3000:], sys.executable)
    assert report["text"].startswith("user-") and report["text"].endswith("/mcp")


@pytest.mark.parametrize("version", ERAS)
def test_a_scoped_tool_over_stdio(version: str):
    import os
    import sys

    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "tests.auth.scoped_server"]
    with Client.stdio(command, cwd=root, protocol_version=version, timeout=WAIT) as client:
        with pytest.raises(MCPError, match="files:write") as info:
            client.call_tool("write", {"text": "x"})
        assert info.value.data == {"error": "insufficient_scope", "scope": "files:write"}
    env = dict(os.environ, SCOPED_GRANT="files:write")
    with Client.stdio(command, cwd=root, env=env, protocol_version=version,
                      timeout=WAIT) as client:
        assert client.call_tool("write", {"text": "y"}).content[0].text == "wrote y"
