"""mcpsync's Client over Streamable HTTP against real servers: server-everything (the
TypeScript reference, handshake era) and an official-SDK MCPServer (both eras)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsync import (
    Client,
    CreateMessageResult,
    ElicitResult,
    HostHandlers,
    RequestTimeoutError,
    Root,
    TextContent,
)
from tests.helpers import WAIT, run_threads
from tests.interop import peers
from tests.serving import free_port, wait_for_port

pytestmark = pytest.mark.interop
SERVERS = Path(__file__).with_name("servers")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def everything_url(node22: str, everything_js: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [node22, "--require", str(SERVERS / "loopback.cjs"), everything_js, "streamableHttp"],
        env={**peers.node_env(), "PORT": str(port)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def official_url(official_python: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([official_python, str(SERVERS / "official_server.py"), "--http",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)


# -- server-everything ------------------------------------------------------------------------


def test_everything_over_http_negotiates_the_handshake_and_serves_tools(everything_url):
    with Client.http(everything_url, timeout=WAIT) as client:  # auto: probe, then handshake
        assert client.protocol_version == "2025-11-25"
        names = {tool.name for tool in client.list_tools()}
        assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
        seen = []
        result = client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 4},
                                  on_progress=seen.append)
        assert not result.is_error
        assert [p.progress for p in seen] == [1, 2, 3, 4]


def test_everything_over_http_resources_prompts_and_threads(everything_url):

    with Client.http(everything_url, protocol_version="2025-11-25", timeout=WAIT) as client:
        resources = client.list_resources()
        assert resources
        assert client.read_resource(resources[0].uri).contents[0].uri == resources[0].uri
        assert client.read_resource("demo://resource/dynamic/text/3").contents[0].text
        rendered = client.get_prompt("args-prompt", {"city": "Oslo"})
        assert "Oslo" in str(rendered.messages[0].content)

        def work(n: int) -> str:
            return client.call_tool("echo", {"message": str(n)}).text

        answers = dict(enumerate(run_threads(work, 8, name="echo", timeout=WAIT)))
        assert answers == {n: f"Echo: {n}" for n in range(8)}


def test_everything_over_http_a_timed_out_call_is_cancelled_and_the_client_goes_on(
        everything_url):
    with Client.http(everything_url, protocol_version="2025-11-25", timeout=WAIT) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("trigger-long-running-operation", {"duration": 10, "steps": 10},
                             timeout=0.5)
        assert client.call_tool("echo", {"message": "after"}).text == "Echo: after"


# -- official MCPServer ----------------------------------------------------------------------


def _handlers(seen: list[object]) -> HostHandlers:
    def elicit(params):
        seen.append("elicit")
        return ElicitResult("accept", {"name": "Ada"})

    def sample(params):
        seen.append("sample")
        return CreateMessageResult(role="assistant", content=TextContent(text="short"),
                                   model="test-model")

    return HostHandlers(elicitation=elicit, sampling=sample,
                        roots=[Root(uri="file:///work", name="work")])


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_official_server_over_http_in_both_eras(official_url, version):
    seen: list[object] = []
    with Client.http(official_url, protocol_version=version, timeout=WAIT,
                     host=_handlers(seen)) as client:
        assert client.protocol_version == version
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        # Resolvers ask in both eras: real requests, or MRTR rounds in 2026-07-28.
        assert client.call_tool("ask_resolved", {}).text == "Ada (30)"
        assert client.call_tool("summarize_resolved", {"text": "long"}).text == (
            "test-model: short")
        assert client.call_tool("roots_resolved", {}).text == "file:///work"
        if version == "2025-11-25":  # ctx.session.* requests exist only in the handshake era
            assert client.call_tool("ask", {}).text == "Ada (30)"
            assert client.call_tool("roots", {}).text == "file:///work"
        assert "elicit" in seen and "sample" in seen


def test_official_server_over_http_auto_speaks_modern(official_url):
    with Client.http(official_url, timeout=WAIT) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}
