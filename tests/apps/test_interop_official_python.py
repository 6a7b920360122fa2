"""Interop with the official Python SDK (mcp 2.3.0), in both eras over stdio:

* mcpsync's host on a server built with the SDK's ``mcp.server.apps.Apps``: it finds the
  tools with views, reads the view and its ``_meta.ui``, the SDK's
  ``client_supports_apps`` sees mcpsync's declaration, and the bridge calls its app-only
  tool (the SDK has no host side of Apps to test the other way round);
* the SDK's client (which declares no apps) on mcpsync's apps server: the app-only tool
  is not listed, the text fallback is there, the view reads with its MIME type.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcpsync import Client, HostHandlers
from mcpsync.apps import MIME_TYPE, model_visible
from mcpsync.apps.host import Bridge, fetch_view, tools_with_views
from mcpsync.apps.wire import host_capabilities
from tests.interop import peers
from tests.serving import with_root_on_path

SERVER = str(Path(__file__).with_name("official_apps_server.py"))
VERSIONS = ["2025-11-25", "2026-07-28"]


@pytest.mark.parametrize("version", VERSIONS)
def test_mcpsyncs_host_on_the_official_apps_server(version: str) -> None:
    python = peers.require(peers.official_python)
    with Client.stdio([python, SERVER], host=HostHandlers(
            extra_capabilities=host_capabilities()), protocol_version=version,
            timeout=30) as client:
        assert tools_with_views(client) == {"get_time": "ui://clock/app.html",
                                            "tick": "ui://clock/app.html"}
        tools = {t.name: t for t in client.list_tools()}
        assert [name for name, t in tools.items() if model_visible(t)] == ["get_time"]
        view = fetch_view(client, "ui://clock/app.html")
        assert view.html == "<!DOCTYPE html><p>clock</p>"
        assert (view.csp, view.prefers_border) == (
            {"connectDomains": ["https://time.example"]}, False)
        bridge = Bridge(client, tools["get_time"], {}, view)
        result = bridge.tool_result()["params"]
        assert result["content"] == [{"type": "text", "text": "12:00 (apps)"}]
        [answer] = bridge.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "tick", "arguments": {}}})
        assert answer["result"]["content"] == [{"type": "text", "text": "tock"}]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_the_official_client_on_mcpsyncs_apps_server(mode: str) -> None:
    server = [sys.executable, "-m", "tests.apps.weather"]
    env = with_root_on_path()
    listed = peers.run_official_client(["--mode", mode, "list-tools"], server, env=env)
    assert [t["name"] for t in listed["tools"]] == ["forecast", "advise"]
    assert listed["tools"][0]["_meta"]["ui"]["resourceUri"] == "ui://weather/dashboard"
    called = peers.run_official_client(
        ["--mode", mode, "call", "forecast", '{"city": "Oslo"}'], server, env=env)
    assert called["result"]["content"] == [{"type": "text", "text": "Oslo: sunny, 21 C"}]
    read = peers.run_official_client(["--mode", mode, "read", "ui://weather/dashboard"],
                                     server, env=env)
    assert read["result"]["contents"][0]["mimeType"] == MIME_TYPE
