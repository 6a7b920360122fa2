"""mcpsync's Client serving the reverse requests of an official-SDK server over stdio."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mcpsync import Client, CreateMessageResult, ElicitResult, HostHandlers, Root, TextContent
from tests.helpers import run_threads

pytestmark = pytest.mark.interop

SERVER = Path(__file__).with_name("servers") / "official_server.py"


@pytest.fixture
def client_factory(official_python):
    made = []

    def make(**handlers):
        client = Client.stdio([official_python, str(SERVER)], timeout=30, **handlers)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_elicitation_sampling_and_roots_are_served(client_factory):
    seen = []

    def elicit(params):
        seen.append(params)
        return ElicitResult("accept", {"name": "Ada"})

    def sample(params):
        seen.append(params)
        text = params.messages[0].content.text
        return CreateMessageResult("assistant", TextContent(f"short {text}"), model="m-1")

    client = client_factory(host=HostHandlers(elicitation=elicit, sampling=sample,
                                              roots=[Root("file:///work/one", name="one")]))
    assert client.protocol_version == "2025-11-25"
    assert client.server_info.name == "official-asker"
    assert {t.name for t in client.list_tools()} >= {"ask", "summarize", "roots", "add"}
    assert client.call_tool("ask").text == "Ada (30)"  # the schema default applied
    assert client.call_tool("summarize", {"text": "a long story"}).text == "m-1: short a long story"
    assert client.call_tool("roots").text == "file:///work/one"
    assert seen[0].requested_schema["properties"]["name"]["type"] == "string"
    assert seen[1].max_tokens == 20


def test_declined_elicitation_and_handlers_on_handler_threads(client_factory):
    threads = []

    def decline(params):
        threads.append(threading.current_thread().name)
        return {"action": "decline"}

    client = client_factory(host=HostHandlers(elicitation=decline))
    assert client.call_tool("ask").text == "user said decline"
    assert threads and "handler" in threads[0] and "reader" not in threads[0]


def test_many_threads_share_one_client(client_factory):
    client = client_factory()

    def work(n):
        return [client.call_tool("add", {"a": n, "b": i}).structured_content["result"]
                for i in range(5)]

    results = dict(enumerate(run_threads(work, 8, name="t-share", timeout=30)))
    assert results == {n: [n + i for i in range(5)] for n in range(8)}


def test_pinned_to_2026_07_28_against_the_official_server(official_python):
    with Client.stdio([official_python, str(SERVER)], timeout=30,
                      protocol_version="2026-07-28") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_info.name == "official-asker"
        assert "add" in {t.name for t in client.list_tools()}
        assert client.call_tool("add", {"a": 2, "b": 40}).structured_content == {"result": 42}


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_official_resolvers_through_mrtr_and_reverse_requests(official_python, version):
    """The official server's resolvers ask through InputRequiredResult rounds in 2026-07-28
    and through real requests in 2025-11-25; the same mcpsync handlers answer both."""
    def sample(params):
        text = params.messages[0].content.text
        return CreateMessageResult("assistant", TextContent(f"short {text}"), model="m-1")

    with Client.stdio([official_python, str(SERVER)], timeout=30, protocol_version=version,
                      host=HostHandlers(elicitation=lambda p: {"action": "accept",
                                                               "content": {"name": "Ada"}},
                                        sampling=sample, roots=[Root("file:///work/r")])) as client:
        assert client.call_tool("ask_resolved").text == "Ada (30)"
        assert client.call_tool("summarize_resolved", {"text": "t"}).text == "m-1: short t"
        assert client.call_tool("roots_resolved").text == "file:///work/r"


def test_auto_negotiates_2026_07_28_with_the_official_server(official_python):
    with Client.stdio([official_python, str(SERVER)], timeout=30,
                      protocol_version="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
