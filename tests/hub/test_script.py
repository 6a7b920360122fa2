"""The issue's proof as a user runs it: a script (its own interpreter) drives a hub over
three servers, stdio, HTTP and one that fails to start, and exits cleanly."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.hub.servers import build_notes
from tests.serving import ROOT, RunningServer

SCRIPT = """
import json, os, sys
from mcpsync import Client, ServerUnavailableError

config = {"mcpServers": {
    "calc": {"command": sys.executable, "args": ["-m", "tests.hub.servers", "calc"]},
    "notes": {"type": "http", "url": os.environ["NOTES_URL"]},
    "broken": {"command": "no-such-program-anywhere"},
}}
with Client.from_config(config, timeout=30) as hub:
    report = {
        "tools": [t.name for t in hub.list_tools()],
        "sum": hub.call_tool("calc_add", {"a": 2, "b": 3}).structured_content,
        "note": hub.call_tool("notes_add", {"text": "x"}).text,
        "failed": {name: type(exc).__name__ for name, exc in hub.failures.items()},
    }
    try:
        hub.call_tool("broken_x")
    except ServerUnavailableError as exc:
        report["unavailable"] = exc.server
print(json.dumps(report))
"""


def test_a_script_drives_three_servers() -> None:
    import json

    app = build_notes().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                              text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT),
                                   "NOTES_URL": running.base + "/mcp"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {
        "tools": ["calc_add", "calc_whoami", "calc_slow", "calc_link", "notes_add"],
        "sum": {"result": 5}, "note": "noted: x",
        "failed": {"broken": "FileNotFoundError"}, "unavailable": "broken"}
    assert "server 'broken' failed to start" in done.stderr
