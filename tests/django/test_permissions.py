"""The site's permissions decide what each MCP user sees: ``permission="shop.issue_refund"``
(a Django permission, checked on ``request.user``) hides the tool from bob's list, a
call of it by bob is answered exactly as a call of an unknown tool, and the list is
marked private."""

from __future__ import annotations

import pytest
import requests

from mcpsync import Client
from tests.helpers import WAIT

VERSIONS = ["2025-11-25", "2026-07-28"]
TOKEN = {"alice": {"Authorization": "Token alice-token"},
         "bob": {"Authorization": "Token bob-token"}}


def _error(client: Client, name: str) -> tuple[object, ...]:
    try:
        result = client.call_tool(name, {"order": 1})
    except Exception as exc:  # a JSON-RPC error: its type, code and message
        return (type(exc).__name__, getattr(exc, "code", None),
                str(exc).replace(name, "NAME"))
    return ("result", result.is_error, result.text.replace(name, "NAME"))


@pytest.mark.parametrize("version", VERSIONS)
def test_two_users_see_different_tools(site, version):
    with (Client.http(site + "/mcp", protocol_version=version, timeout=WAIT,
                      headers=TOKEN["alice"]) as alice,
          Client.http(site + "/mcp", protocol_version=version, timeout=WAIT,
                      headers=TOKEN["bob"]) as bob):
        alices = {t.name for t in alice.list_tools()}
        bobs = {t.name for t in bob.list_tools()}
        assert "refund" in alices and "refund" not in bobs
        assert alices - bobs == {"refund"}
        assert alice.call_tool("refund", {"order": 7}).text == "order 7 refunded by alice"
        assert _error(bob, "refund") == _error(bob, "no_such_tool")


def test_a_list_that_depends_on_the_user_is_private(site):
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    answer = requests.post(site + "/mcp", json=body, headers={**headers, **TOKEN["bob"]},
                           timeout=WAIT)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["cacheScope"] == "private"
