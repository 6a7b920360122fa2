"""One principal key everywhere (#14): sessions, ``requestState`` and tasks are each bound
to the (issuer, subject, client) of the access token, never to the subject alone. Two
issuers may both have an "alice", and two clients of one user are two principals."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from mcpsync import AccessToken
from tests.helpers import require_module, wait_until
from tests.http.raw import answer_of, envelope, modern_headers
from tests.tasks.peers import WAIT, Peer
from tests.tasks.task_server import make_server

from .authserver import AuthServer
from .test_resource_server import bearer

require_module("jwt")


def _token(meta: dict[str, Any]) -> AccessToken:
    return AccessToken("alice", str(meta.get("test/client", "c1")),
                       claims={"iss": str(meta.get("test/iss", "https://as-one.example"))})


@pytest.mark.parametrize("other", [{"test/iss": "https://as-two.example"},
                                   {"test/client": "c2"}])
def test_the_same_subject_from_another_issuer_or_client_cannot_see_a_task(
        other: dict[str, str]) -> None:
    server = make_server()

    @server.request_scope
    def authenticate(ctx: Any) -> Any:  # a stand-in for the resource server
        ctx.transport.auth = _token(ctx.meta)
        yield

    first, second = (Peer("memory", "modern", server=server),
                     Peer("memory", "modern", server=server))
    try:
        task_id = first.result("tools/call", {"name": "slow", "arguments": {"seconds": 0.2}},
                               meta={})["taskId"]
        for method in ("tasks/get", "tasks/cancel"):
            assert second.error(method, {"taskId": task_id}, meta=other)["code"] == -32602
        wait_until(lambda: first.result("tasks/get", {"taskId": task_id},
                                        meta={})["status"] == "completed", timeout=WAIT)
    finally:
        first.close()
        second.close()
        server.close_tasks()


def test_a_request_state_cannot_be_replayed_by_another_client_of_the_same_user(
        protected: Any, jwt_auth: AuthServer) -> None:
    mcp = protected()
    mine = jwt_auth.mint(audience=mcp.url, subject="alice", client_id="c1")
    theirs = jwt_auth.mint(audience=mcp.url, subject="alice", client_id="c2")
    caps = {"elicitation": {}}

    def call(token: str, extra: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "confirm", "arguments": {}, **extra,
                           "_meta": envelope(capabilities=caps)}}
        response = requests.post(mcp.url, data=json.dumps(body), timeout=WAIT,
                                 headers={**modern_headers("tools/call", "confirm"),
                                          **bearer(token)})
        return answer_of(response)

    first = call(mine, {})["result"]
    [key] = first["inputRequests"]
    retry = {"requestState": first["requestState"],
             "inputResponses": {key: {"action": "accept", "content": {"ok": True}}}}
    assert call(theirs, retry)["error"]["code"] == -32602
    assert call(mine, retry)["result"]["content"][0]["text"] == "confirmed"
