"""``mcpsync.testing`` (the scripted server, ``connect``) and the pytest plugin's
``mcp_client`` fixture, the latter run the way a user runs it: pytest in a subprocess on a
test file that defines only ``mcp_server``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpsync import Client, InvalidParamsError, MCPSyncError, Server
from mcpsync.testing import ERAS, ScriptedServer, connect

ROOT = Path(__file__).resolve().parents[1]


def script(method: str, params: dict) -> dict:
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"scripted {params['name']}"}]}
    if method == "tools/list":
        return {"tools": [{"name": "only", "inputSchema": {"type": "object"}}]}
    raise InvalidParamsError("not scripted")


@pytest.mark.parametrize("version", ERAS)
def test_a_scripted_server_answers_in_both_eras_and_records(version):
    with ScriptedServer(script) as scripted, \
            scripted.client(protocol_version=version) as client:
        assert client.protocol_version == version
        assert [t.name for t in client.list_tools()] == ["only"]
        assert client.call_tool("anything", {"x": 1}).text == "scripted anything"
        with pytest.raises(InvalidParamsError, match="not scripted"):
            client.read_resource("file:///x")
    sent = scripted.sent("tools/call")
    assert sent[0]["params"]["name"] == "anything"
    assert sent[0]["params"]["arguments"] == {"x": 1}
    if version == "2025-11-25":
        assert [n["method"] for n in scripted.notifications] == ["notifications/initialized"]


def test_closing_the_scripted_server_ends_its_thread_and_fails_the_client():
    scripted = ScriptedServer(script)
    client = scripted.client()
    assert scripted._thread.name.startswith("mcpsync-scripted-")
    scripted.close()
    assert not scripted._thread.is_alive()
    with pytest.raises(MCPSyncError):  # the connection is gone
        client.call_tool("x")
    client.close()


def test_a_check_sees_every_request_first():
    seen = []
    with ScriptedServer(script, check=seen.append) as scripted, scripted.client() as client:
        client.call_tool("a")
    assert [m["method"] for m in seen] == ["server/discover", "tools/call"]


def test_records_are_bounded():
    with ScriptedServer(script, max_recorded=3) as scripted, scripted.client() as client:
        for i in range(6):
            client.call_tool(f"t{i}")
    assert [r["params"]["name"] for r in scripted.requests] == ["t3", "t4", "t5"]


@pytest.mark.parametrize("version", ERAS)
def test_connect_speaks_the_era_asked_for(version):
    server = Server("s")
    server.add_tool(lambda: "hi", name="hi")
    with connect(server, version) as client:
        assert client.protocol_version == version
        assert client.call_tool("hi").text == "hi"
    assert client.closed


USER_TESTS = """\
import pytest
from mcpsync import Server

server = Server("users")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture
def mcp_server():
    return server


def test_add(mcp_client, mcp_protocol_version):
    assert mcp_client.protocol_version == mcp_protocol_version
    assert mcp_client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
"""


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest on ``folder`` with this checkout's mcpsync; the installed entry point (which
    may be another checkout's) is blocked so that the plugin comes from ``args``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:mcpsync", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)


def test_the_plugin_runs_a_users_test_in_both_eras(tmp_path):
    (tmp_path / "test_users.py").write_text(USER_TESTS)
    done = run_pytest(tmp_path, "-p", "mcpsync.pytest_plugin", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_add[2026-07-28] PASSED" in done.stdout
    assert "test_add[2025-11-25] PASSED" in done.stdout


def test_the_plugin_loads_from_a_conftest_too(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["mcpsync.pytest_plugin"]\n')
    (tmp_path / "test_users.py").write_text(USER_TESTS)
    done = run_pytest(tmp_path, "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_without_mcp_server_the_error_says_what_to_define(tmp_path):
    (tmp_path / "test_users.py").write_text("def test_x(mcp_client):\n    pass\n")
    done = run_pytest(tmp_path, "-q", "-p", "mcpsync.pytest_plugin")
    assert done.returncode != 0
    assert "needs an mcp_server fixture" in done.stdout + done.stderr


def test_the_entry_point_is_declared():
    setup = (ROOT / "setup.cfg").read_text()
    assert "pytest11 =\n    mcpsync = mcpsync.pytest_plugin" in textwrap.dedent(setup)
    assert Client  # the plugin's client is the public Client
