"""The TypeScript SDK's client (``@modelcontextprotocol/sdk``) against the Django site as
alice and as bob (DRF token headers): each is the MCP principal, and the two are shown
different tools (``refund`` needs a Django permission)."""

from __future__ import annotations

import pytest

from .ts_client import ts_client

pytestmark = pytest.mark.interop


def test_ts_client_as_two_django_users(site):
    alice = ts_client(site + "/mcp", "alice-token")
    bob = ts_client(site + "/mcp", "bob-token")
    assert alice["whoami"] == "alice (no header)" and bob["whoami"] == "bob (no header)"
    assert set(alice["tools"]) - set(bob["tools"]) == {"refund"}
