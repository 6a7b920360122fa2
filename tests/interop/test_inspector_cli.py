"""The MCP Inspector's scripted client (@modelcontextprotocol/inspector 2.12.0, ``--cli
--format json``) listing and calling the tools of mcpsync servers over stdio and over
Streamable HTTP, with ``--protocol-era legacy`` and ``modern`` (and ``auto`` on HTTP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop import peers
from tests.interop.servers.asking_server import server as asking_server
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = [sys.executable, str(ROOT / "tests" / "server" / "fixture_server.py")]
ASKING = [sys.executable, str(Path(__file__).with_name("servers") / "asking_server.py")]
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


@pytest.fixture(scope="module")
def http_urls() -> Iterator[dict[str, str]]:
    """The fixture and asking servers, each at /mcp on its own real socket."""
    apps = {"fixture": fixture_server.wsgi_app(path="/mcp"),
            "asking": asking_server.wsgi_app(path="/mcp")}
    running = {name: RunningServer(app, on_stop=app.close) for name, app in apps.items()}
    try:
        yield {name: r.base + "/mcp" for name, r in running.items()}
    finally:
        for r in running.values():
            r.stop()


def inspect(node22: str, inspector_js: str, target: list[str], era: str, *args: str,
            expect_rc: int = 0) -> Any:
    """Run ``inspector --cli --format json -q TARGET --protocol-era ERA ARGS``; return the
    JSON it printed on stdout (or, on failure, the error envelope on stderr)."""
    cmd = [node22, inspector_js, "--cli", "--format", "json", "-q"]
    if target[0].startswith("http"):
        cmd += target
    else:  # a stdio server: the Inspector passes only what -e gives it
        cmd += ["-e", f"PYTHONPATH={ROOT}", *target]
    cmd += ["--protocol-era", era, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                          env=peers.node_env(os.environ), cwd=ROOT, check=False)
    assert proc.returncode == expect_rc, (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    out = proc.stdout.strip() or proc.stderr.strip()
    return json.loads(out)


def check_era(result: dict[str, Any], era: str, name: str) -> None:
    """2026-07-28 results carry serverInfo in ``_meta``; handshake-era results do not."""
    if era == "legacy":
        assert SERVER_INFO not in result.get("_meta", {})
    else:
        assert result["_meta"][SERVER_INFO]["name"] == name


TRANSPORTS = ["stdio", "http"]
ERAS = ["legacy", "modern"]


def target_of(transport: str, name: str, http_urls: dict[str, str] | None) -> list[str]:
    if transport == "http":
        assert http_urls is not None
        return [http_urls[name]]
    return FIXTURE if name == "fixture" else ASKING


@pytest.fixture
def urls(request: pytest.FixtureRequest) -> dict[str, str] | None:
    """The HTTP servers, started only for the HTTP parameters."""
    if request.node.callspec.params.get("transport") == "http":
        return request.getfixturevalue("http_urls")  # type: ignore[no-any-return]
    return None


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_lists_tools(node22, inspector_js, urls, transport, era):
    out = inspect(node22, inspector_js, target_of(transport, "fixture", urls), era,
                  "--method", "tools/list")
    tools = {t["name"]: t for t in out["result"]["tools"]}
    assert {"echo", "add", "reading", "mixed", "slow", "progress"} <= set(tools)
    assert tools["echo"]["title"] == "Echo"
    assert tools["echo"]["annotations"] == {"readOnlyHint": True}
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["add"]["outputSchema"]["properties"]["result"] == {"type": "integer"}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_calls_tools(node22, inspector_js, urls, transport, era):
    target = target_of(transport, "fixture", urls)
    add = inspect(node22, inspector_js, target, era, "--method", "tools/call",
                  "--tool-name", "add", "--tool-arg", "a=2", "b=40")["result"]
    assert add["content"] == [{"type": "text", "text": "42"}]
    assert add["structuredContent"] == {"result": 42}
    check_era(add, era, "fixture")
    reading = inspect(node22, inspector_js, target, era, "--method", "tools/call",
                      "--tool-name", "reading", "--tool-args-json", '{"city": "Oslo"}')["result"]
    assert reading["structuredContent"] == {"city": "Oslo", "value": 21.5, "unit": "celsius"}
    echo = inspect(node22, inspector_js, target, era, "--method", "tools/call",
                   "--tool-name", "echo", "--tool-args-json", '{"text": "hi there"}')["result"]
    assert echo["content"] == [{"type": "text", "text": "hi there"}]
    # A tool result with isError: still printed, and exit status 5.
    failed = inspect(node22, inspector_js, target, era, "--method", "tools/call",
                     "--tool-name", "fail", "--tool-arg", "message=nope", expect_rc=5)["result"]
    assert failed["isError"] is True and "nope" in failed["content"][0]["text"]
    progress = inspect(node22, inspector_js, target, era, "--method", "tools/call",
                       "--tool-name", "progress", "--tool-arg", "steps=3")["result"]
    assert progress["content"] == [{"type": "text", "text": "ok"}]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_tool_exits_5(node22, inspector_js, urls, transport, era):
    out = inspect(node22, inspector_js, target_of(transport, "fixture", urls), era,
                  "--method", "tools/call", "--tool-name", "no_such_tool", expect_rc=5)
    assert out["error"]["code"] == "tool_not_found"
    assert "no_such_tool" in out["error"]["message"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resources_and_prompts(node22, inspector_js, urls, transport, era):
    target = target_of(transport, "asking", urls)
    read = inspect(node22, inspector_js, target, era, "--method", "resources/read",
                   "--uri", "test://template/7/data")["result"]
    assert read["contents"][0]["uri"] == "test://template/7/data"
    assert json.loads(read["contents"][0]["text"]) == {"id": "7"}
    prompt = inspect(node22, inspector_js, target, era, "--method", "prompts/get",
                     "--prompt-name", "greet", "--prompt-args", "name=Ada")["result"]
    assert prompt["messages"][0]["content"]["text"] == "Please greet Ada."


def test_auto_era_over_http_picks_2026_07_28(node22, inspector_js, http_urls):
    add = inspect(node22, inspector_js, [http_urls["fixture"]], "auto", "--method",
                  "tools/call", "--tool-name", "add", "--tool-arg", "a=1", "b=2")["result"]
    assert add["structuredContent"] == {"result": 3}
    check_era(add, "modern", "fixture")


def test_old_http_sse_transport(node22, inspector_js, http_urls):
    """``--transport sse``: the 2024-11-05 HTTP+SSE endpoints served beside /mcp."""
    sse_url = http_urls["fixture"].removesuffix("/mcp") + "/sse"
    out = inspect(node22, inspector_js, ["--transport", "sse", "--server-url", sse_url],
                  "legacy", "--method", "tools/call", "--tool-name", "add", "--tool-arg",
                  "a=5", "b=6")
    assert out["result"]["structuredContent"] == {"result": 11}
