"""The TypeScript SDK's client against the Flask app as alice and as bob (Flask-Login
token headers): each is the MCP principal, and the two are shown different tools."""

from __future__ import annotations

import pytest

from tests.django.ts_client import ts_client

pytestmark = pytest.mark.interop


def test_ts_client_as_two_flask_users(flask_site):
    alice = ts_client(flask_site + "/mcp", "alice-token")
    bob = ts_client(flask_site + "/mcp", "bob-token")
    assert alice["whoami"] == "alice" and bob["whoami"] == "bob"
    assert set(alice["tools"]) - set(bob["tools"]) == {"refund"}
