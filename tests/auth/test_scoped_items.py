"""Per-resource and per-prompt scopes (#14), on the one path tool scopes take.

``@server.resource(uri, scopes=[...])`` (fixed or a template) and
``@server.prompt(scopes=[...])``: over HTTP a read, get, subscribe, listen or completion
the token lacks the scope for is a 403 ``insufficient_scope`` naming it, decided before
dispatch; off HTTP (stdio, memory, with the host's own auth layer) a JSON-RPC error with
the same data; ``hide_unauthorized`` hides them from the lists. Both eras."""

from __future__ import annotations

import json
import os
import queue
import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import AccessToken, Client, MCPError, Server
from mcpsync.dispatch.inbound import current_transport
from tests.helpers import require_module
from tests.http.raw import BOTH, SseReader, answer_of, envelope, modern_headers, post_modern

from .authserver import AuthServer
from .scoped_server import add_scoped_items
from .test_resource_server import ERAS, WAIT, bearer, challenge_of

require_module("jwt")

ROOT = Path(__file__).resolve().parents[2]

#: (method, params, the scope it needs) for each kind of scoped item.
GUARDED = {
    "read": ("resources/read", {"uri": "notes://secret"}, "notes:read"),
    "template": ("resources/read", {"uri": "notes://private/plans"}, "notes:read"),
    "prompt": ("prompts/get", {"name": "report", "arguments": {"quarter": "Q1"}}, "reports"),
    "complete_prompt": ("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "report"},
        "argument": {"name": "quarter", "value": "Q"}}, "reports"),
    "complete_template": ("completion/complete", {
        "ref": {"type": "ref/resource", "uri": "notes://private/{name}"},
        "argument": {"name": "name", "value": ""}}, "notes:read"),
}


class Http:
    """Raw JSON-RPC to a protected endpoint in one era, with one bearer token; in the
    handshake era on a session the token's principal initialized."""

    def __init__(self, url: str, version: str, token: str) -> None:
        self.url, self.version, self.token = url, version, token
        self.session_id: str | None = None
        if version != "2026-07-28":
            response = requests.post(url, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}},
                headers={"Accept": BOTH, **bearer(token)}, timeout=WAIT)
            assert response.status_code == 200, response.text
            self.session_id = response.headers["Mcp-Session-Id"]

    def post(self, method: str, params: dict[str, Any]) -> requests.Response:
        if self.session_id is None:
            return post_modern(self.url, method, params, headers=bearer(self.token))
        return requests.post(self.url, timeout=WAIT, data=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), headers={
            "Accept": BOTH, "Content-Type": "application/json", **bearer(self.token),
            "Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": self.version})

    def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.post(method, params)
        assert response.status_code == 200, response.text
        answer = answer_of(response)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result


def _refused(response: requests.Response, scope: str, prm_url: str) -> None:
    assert response.status_code == 403, response.text
    assert challenge_of(response) == (f'Bearer error="insufficient_scope", scope="{scope}", '
                                      f'resource_metadata="{prm_url}"')
    assert response.json()["error"]["code"] == -32600


# -- over HTTP: a 403 before dispatch ---------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("case", sorted(GUARDED))
def test_a_scoped_item_over_http_is_a_403_until_the_token_has_the_scope(
        protected: Any, jwt_auth: AuthServer, version: str, case: str) -> None:
    mcp = protected()
    method, params, scope = GUARDED[case]
    reader = Http(mcp.url, version, jwt_auth.mint(audience=mcp.url, scopes=["mcp"]))
    _refused(reader.post(method, params), scope, mcp.prm_url)
    granted = Http(mcp.url, version, jwt_auth.mint(
        audience=mcp.url, scopes=["mcp", "notes:read", "reports"]))
    assert granted.result(method, params)


@pytest.mark.parametrize("version", ERAS)
def test_unscoped_items_and_unknown_names_are_not_refused(protected: Any,
                                                          jwt_auth: AuthServer,
                                                          version: str) -> None:
    mcp = protected()
    reader = Http(mcp.url, version, jwt_auth.mint(audience=mcp.url, scopes=["mcp"]))
    text = reader.result("resources/read", {"uri": "notes://public"})["contents"][0]["text"]
    assert text == "for everyone"
    assert reader.result("prompts/get", {"name": "hello"})["messages"]
    missing = answer_of(reader.post("resources/read", {"uri": "notes://nothing"}))
    assert "error" in missing  # not found, as before: no 403 for what does not exist


def test_a_subscription_to_a_resource_the_token_may_not_read_is_refused(
        protected: Any, jwt_auth: AuthServer) -> None:
    mcp = protected()
    reader = Http(mcp.url, "2025-11-25", jwt_auth.mint(audience=mcp.url, scopes=["mcp"]))
    _refused(reader.post("resources/subscribe", {"uri": "notes://secret"}), "notes:read",
             mcp.prm_url)
    _refused(reader.post("resources/subscribe", {"uri": "notes://private/plans"}),
             "notes:read", mcp.prm_url)
    assert reader.result("resources/subscribe", {"uri": "notes://public"}) == {}


def test_a_listen_following_a_resource_the_token_may_not_read_is_refused(
        protected: Any, jwt_auth: AuthServer) -> None:
    mcp = protected()
    reader = Http(mcp.url, "2026-07-28", jwt_auth.mint(audience=mcp.url, scopes=["mcp"]))
    listen = {"notifications": {"resourceSubscriptions": ["notes://public",
                                                          "notes://private/plans"]}}
    _refused(reader.post("subscriptions/listen", listen), "notes:read", mcp.prm_url)


@pytest.mark.parametrize("version", ERAS)
def test_hide_unauthorized_hides_resources_templates_and_prompts(
        protected: Any, jwt_auth: AuthServer, version: str) -> None:
    mcp = protected()
    reader = Http(mcp.url, version, jwt_auth.mint(audience=mcp.url, scopes=["mcp"]))
    everything = Http(mcp.url, version, jwt_auth.mint(
        audience=mcp.url, scopes=["mcp", "notes:read", "reports"]))

    def lists(who: Http) -> tuple[set[str], set[str], set[str]]:
        return ({r["uri"] for r in who.result("resources/list", {})["resources"]},
                {t["uriTemplate"] for t in who.result(
                    "resources/templates/list", {})["resourceTemplates"]},
                {p["name"] for p in who.result("prompts/list", {})["prompts"]})

    full = ({"notes://public", "notes://secret"}, {"notes://private/{name}"},
            {"hello", "report"})
    assert lists(reader) == full  # the default: listed; a read is a 403 to step up
    server = mcp._apps[0].server
    server.resources.hide_unauthorized = True
    server.prompts.hide_unauthorized = True
    assert lists(reader) == ({"notes://public"}, set(), {"hello"})
    assert lists(everything) == full
    if version == "2026-07-28":
        assert reader.result("prompts/list", {})["cacheScope"] == "private"
        assert reader.result("resources/list", {})["cacheScope"] == "private"


# -- off HTTP: the same rule as a JSON-RPC error ---------------------------------------


def _granting(scopes: str | None) -> Server:
    server = Server("scoped-memory")

    @server.tool(task="optional", scopes=["files:write"])
    def write_later(text: str) -> str:
        return "wrote " + text

    add_scoped_items(server)
    if scopes is not None:
        def grant(message: Any, next_: Any) -> Any:  # the host's own auth layer
            transport = current_transport()
            assert transport is not None
            transport.auth = AccessToken("me", "host", frozenset(scopes.split()))
            return next_(message)

        server.recv_middleware.append(grant)
    return server


def _client(kind: str, version: str, scopes: str | None) -> Client:
    if kind == "memory":
        return Client.memory(_granting(scopes), protocol_version=version, timeout=WAIT)
    env = dict(os.environ)
    env.pop("SCOPED_GRANT", None)
    if scopes is not None:
        env["SCOPED_GRANT"] = scopes
    return Client.stdio([sys.executable, "-m", "tests.auth.scoped_server"], cwd=ROOT,
                        env=env, protocol_version=version, timeout=WAIT)


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["memory", "stdio"])
def test_off_http_a_scoped_item_is_a_json_rpc_error_unless_granted(kind: str,
                                                                   version: str) -> None:
    with _client(kind, version, "notes:other") as client:
        for case, (method, params, scope) in GUARDED.items():
            with pytest.raises(MCPError, match="Forbidden") as info:
                client.request(method, params)
            assert info.value.code == -32600, case
            assert info.value.data == {"error": "insufficient_scope", "scope": scope}, case
        assert client.read_resource("notes://public").contents[0].text == "for everyone"
        with pytest.raises(MCPError) as refused:
            client.listen(resource_uris=["notes://secret"])
        assert refused.value.data == {"error": "insufficient_scope", "scope": "notes:read"}
    with _client(kind, version, "notes:read reports") as client:
        for case, (method, params, _) in GUARDED.items():
            assert client.request(method, params), case
        client.listen(resource_uris=["notes://secret"]).close()


@pytest.mark.parametrize("version", ERAS)
def test_no_principal_at_all_fails_closed(version: str) -> None:
    with _client("memory", version, None) as client:
        with pytest.raises(MCPError, match="notes:read"):
            client.read_resource("notes://private/x")
        assert client.get_prompt("hello").messages


def test_a_scoped_task_is_refused_before_it_is_created() -> None:
    """A tool that may run as a task is checked before the task exists: the caller gets
    the insufficient_scope error, not a task id whose task then fails."""
    server = _granting("notes:read")
    with Client.memory(server, protocol_version="2026-07-28", timeout=WAIT) as client:
        with pytest.raises(MCPError) as info:
            client.start_task("write_later", {"text": "x"})
        assert info.value.data == {"error": "insufficient_scope", "scope": "files:write"}
    server.close_tasks()


def test_scopes_must_be_a_list() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match="list of scope names"):
        server.resource("notes://x", scopes="notes:read")
    with pytest.raises(TypeError, match="list of scope names"):
        server.prompt(scopes="reports")


@pytest.mark.parametrize("granted", ["notes:other", "notes:read"])
def test_a_listen_on_a_prefix_hears_only_the_updates_it_may_read(granted: str) -> None:
    """``notes://`` needs no scope (nothing is registered there) but covers
    ``notes://secret`` and ``notes://private/plans``: their updates reach only a listener
    whose principal may read them, or the URI of a scoped resource would leak."""
    server = _granting(granted)
    heard: queue.Queue[str] = queue.Queue()
    with Client.memory(server, protocol_version="2026-07-28", timeout=WAIT) as client:
        subscription = client.listen(tools=False, prompts=False, resources=False,
                                     resource_uris=["notes://"],
                                     on_notification=lambda note: heard.put(note.uri or ""))
        for uri in ("notes://secret", "notes://private/plans", "notes://public"):
            server.notify_resource_updated(uri)
        got = [heard.get(timeout=WAIT) for _ in range(1 if granted == "notes:other" else 3)]
        subscription.close()
    assert got == (["notes://public"] if granted == "notes:other" else
                   ["notes://secret", "notes://private/plans", "notes://public"])


def test_over_http_a_prefix_listen_hears_only_what_the_token_may_read(
        protected: Any, jwt_auth: AuthServer) -> None:
    mcp = protected()
    token = jwt_auth.mint(audience=mcp.url, scopes=["mcp"])
    body = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": ["notes://"]}, "_meta": envelope()}}
    response = requests.post(mcp.url, data=json.dumps(body), stream=True, timeout=WAIT,
                             headers={**modern_headers("subscriptions/listen"),
                                      **bearer(token)})
    server = mcp._apps[0].server
    try:
        assert response.status_code == 200, response.text
        reader = SseReader(response)
        heard: list[str] = []
        while True:
            event = reader.next_event()
            assert event is not None, heard
            message = json.loads(event["data"])
            if message.get("method") == "notifications/subscriptions/acknowledged":
                for uri in ("notes://secret", "notes://private/plans", "notes://public"):
                    server.notify_resource_updated(uri)
            elif message.get("method") == "notifications/resources/updated":
                heard.append(message["params"]["uri"])
                if heard[-1] == "notes://public":
                    break
        assert heard == ["notes://public"]
    finally:
        response.close()
        server.end_subscriptions()
