"""examples/flask_app.py on werkzeug's threaded server: Flask's own routes keep working and
/mcp serves MCP to the official SDK client and to mcpsync's Client, in both eras."""

from __future__ import annotations

import json
import uuid

import pytest
import requests

from mcpsync import Client, Progress

from .helpers import official

MODES = ["legacy", "modern"]


def test_flask_routes_still_work(flask_base):
    index = requests.get(flask_base + "/", timeout=10)
    assert index.status_code == 200 and "Flask notes" in index.text
    created = requests.post(flask_base + "/notes", json={"title": "t1", "body": "b1"},
                            timeout=10)
    assert created.status_code == 201
    assert requests.get(flask_base + "/notes", timeout=10).json()["t1"] == "b1"
    assert requests.get(flask_base + "/nowhere", timeout=10).status_code == 404


def test_mcp_is_only_under_its_prefix(flask_base):
    # A Flask 404 (HTML), not the MCP endpoint's JSON-RPC error.
    missing = requests.post(flask_base + "/mcpx", json={}, timeout=10)
    assert missing.status_code == 404
    assert "jsonrpc" not in missing.text


@pytest.mark.interop
@pytest.mark.parametrize("mode", MODES)
def test_official_client_over_the_mount(official_python, flask_base, mode):
    url = flask_base + "/mcp"
    listed = official(url, mode, "list-tools")
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == {"add_note", "list_notes", "read_note"}
    assert tools["list_notes"]["outputSchema"]["required"] == ["titles", "count"]
    title = f"official-{mode}-{uuid.uuid4().hex[:6]}"
    added = official(url, mode, "call", "add_note", json.dumps({"title": title, "body": "hi"}))
    assert added["rawResult"]["content"][0]["text"] == f"saved {title!r}"
    notes = official(url, mode, "--list-first", "call", "list_notes", "{}")
    assert title in notes["rawResult"]["structuredContent"]["titles"]
    read = official(url, mode, "progress", "read_note", json.dumps({"title": title}))
    assert [p["message"] for p in read["progress"]] == ["looking", "found"]
    assert read["rawResult"]["content"][0]["text"] == "hi"
    # ... and what MCP wrote, Flask serves.
    assert requests.get(flask_base + "/notes", timeout=10).json()[title] == "hi"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_mcpsync_client_over_the_mount(flask_base, version):
    seen: list[Progress] = []
    with Client.http(flask_base + "/mcp", protocol_version=version, timeout=20) as client:
        assert client.protocol_version == version
        assert {t.name for t in client.list_tools()} == {"add_note", "list_notes", "read_note"}
        assert client.call_tool("add_note", {"title": version, "body": "from mcpsync"}).text == (
            f"saved {version!r}")
        listed = client.call_tool("list_notes")
        assert version in listed.structured_content["titles"]
        read = client.call_tool("read_note", {"title": version}, on_progress=seen.append)
        assert read.text == "from mcpsync" and [p.message for p in seen] == ["looking", "found"]
        missing = client.call_tool("read_note", {"title": "no such note"})
        assert missing.is_error
    assert requests.get(flask_base + "/notes", timeout=10).json()[version] == "from mcpsync"


def test_old_http_sse_clients_find_the_mount(flask_base):
    """2024-11-05 HTTP+SSE under the prefix: GET /mcp/sse announces /mcp/messages."""
    with Client.http(flask_base + "/mcp/sse", protocol_version="2024-11-05",
                     timeout=20) as client:
        assert client.protocol_version == "2024-11-05"
        listed = client.call_tool("list_notes")  # 2024-11-05 has no structuredContent
        assert json.loads(listed.text)["count"] >= 1


def test_mcpsync_client_auto_picks_2026_07_28(flask_base):
    with Client.http(flask_base + "/mcp", timeout=20) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_info.name == "flask-notes"


def test_mount_refuses_an_endpoint_that_would_404_everything():
    from flask import Flask

    from mcpsync import Server
    from mcpsync.http import mount

    server = Server("m")
    wsgi = Flask("mount-check").wsgi_app
    endpoint, plain = server.wsgi_app(path="/mcp"), server.wsgi_app()
    try:
        with pytest.raises(ValueError, match="path=None"):
            mount(wsgi, endpoint, "/mcp")
        with pytest.raises(TypeError, match="no options"):
            mount(wsgi, plain, "/mcp", json_window=1.0)
        with pytest.raises(ValueError, match="drop path"):
            mount(wsgi, server, "/mcp", path="/mcp")
        with pytest.raises(ValueError, match="start with '/'"):
            mount(wsgi, server, "mcp")
    finally:
        endpoint.close()
        plain.close()
