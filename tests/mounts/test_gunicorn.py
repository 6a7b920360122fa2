"""examples/flask_app.py under gunicorn's gthread worker (a real subprocess): Flask's
routes and /mcp (mcpsync's Client and the official SDK client, both eras)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
import requests

from mcpsync import Client
from tests.serving import free_port, serving_process

from .helpers import ENV, EXAMPLES, official


@pytest.fixture(scope="module")
def gunicorn_base() -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--workers", "1",
            "--threads", "16", "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "5",
            "--chdir", str(EXAMPLES), "flask_app:app"]
    with serving_process(argv, port, env=ENV) as base:
        yield base


def test_flask_route_under_gunicorn(gunicorn_base):
    index = requests.get(gunicorn_base + "/", timeout=20)
    assert index.status_code == 200 and "Flask notes" in index.text


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_mcpsync_client_under_gunicorn(gunicorn_base, version):
    with Client.http(gunicorn_base + "/mcp", protocol_version=version, timeout=20) as client:
        assert client.protocol_version == version
        assert client.call_tool("add_note", {"title": f"g-{version}", "body": "x"}).text == (
            f"saved 'g-{version}'")
        seen = []
        assert client.call_tool("read_note", {"title": f"g-{version}"},
                                on_progress=seen.append).text == "x"
        assert [p.message for p in seen] == ["looking", "found"]
    assert requests.get(gunicorn_base + "/notes", timeout=20).json()[f"g-{version}"] == "x"


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_official_client_under_gunicorn(official_python, gunicorn_base, mode):
    url = gunicorn_base + "/mcp"
    notes = official(url, mode, "--list-first", "call", "list_notes", "{}")
    assert "welcome" in notes["rawResult"]["structuredContent"]["titles"]
    read = official(url, mode, "progress", "read_note", json.dumps({"title": "welcome"}))
    assert [p["progress"] for p in read["progress"]] == [1, 2]
