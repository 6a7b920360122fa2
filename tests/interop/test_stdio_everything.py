"""mcpsync's Client driving the TypeScript reference server (server-everything) over stdio."""

from __future__ import annotations

import pytest

from mcpsync import Client
from tests.helpers import WAIT, run_threads

pytestmark = pytest.mark.interop


@pytest.fixture
def everything(everything_stdio_cmd):
    with Client.stdio(everything_stdio_cmd, timeout=WAIT) as client:
        yield client


def test_tools_and_echo(everything):
    assert everything.protocol_version == "2025-11-25"
    names = {tool.name for tool in everything.list_tools()}
    assert len(names) >= 12 and {"echo", "get-sum", "trigger-long-running-operation"} <= names
    assert everything.call_tool("echo", {"message": "hi"}).text == "Echo: hi"


def test_progress_arrives_before_the_result(everything):
    seen = []
    result = everything.call_tool("trigger-long-running-operation",
                                  {"duration": 1, "steps": 4}, on_progress=seen.append)
    assert not result.is_error
    assert [p.progress for p in seen] == [1, 2, 3, 4]
    assert all(p.total == 4 for p in seen)


def test_resources_listed_and_read(everything):
    resources = everything.list_resources()
    assert len(resources) >= 7
    text = everything.read_resource(resources[0].uri)
    assert text.contents and text.contents[0].uri == resources[0].uri
    templates = {t.uri_template for t in everything.list_resource_templates()}
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    dynamic = everything.read_resource("demo://resource/dynamic/text/3")
    assert dynamic.contents[0].text


def test_prompts(everything):
    prompts = {p.name: p for p in everything.list_prompts()}
    assert "args-prompt" in prompts
    rendered = everything.get_prompt("args-prompt", {"city": "Oslo"})
    assert "Oslo" in str(rendered.messages[0].content)


def test_sixteen_threads_share_one_client(everything):
    def work(n: int) -> list[str]:
        return [everything.call_tool("echo", {"message": f"{n}-{i}"}).text for i in range(10)]

    results = dict(enumerate(run_threads(work, 16, name="t-share", timeout=WAIT)))
    assert results == {n: [f"Echo: {n}-{i}" for i in range(10)] for n in range(16)}


def test_auto_falls_back_to_the_handshake_with_a_legacy_only_server(everything_stdio_cmd):
    with Client.stdio(everything_stdio_cmd, timeout=WAIT, protocol_version="auto") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.call_tool("echo", {"message": "auto"}).text == "Echo: auto"
