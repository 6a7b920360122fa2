"""Composition end to end: a front door that mounts proxies of two remotes (an mcpsync
server over stdio and the official Python SDK's server over stdio), itself served over
stdio and HTTP to a client of either era. The parts are tested alone in test_mount.py and
test_proxy.py; this is the "one front door to several servers" a user builds from them."""

from __future__ import annotations

import os
import queue
from typing import Any

import pytest

from mcpsync import Server
from tests.interop import peers
from tests.serving import ROOT, client_over

from .compose_front import build

ERAS = ("2025-11-25", "2026-07-28")


@pytest.mark.interop
@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("served", ["stdio", "http"])
def test_one_front_door_to_two_proxied_servers(served: str, version: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    python = peers.require(peers.official_python)
    monkeypatch.setenv("OFFICIAL_PYTHON", python)
    monkeypatch.chdir(ROOT)
    door = build(python)
    try:
        progress: list[Any] = []
        options: dict[str, Any] = {"env": {**os.environ, "OFFICIAL_PYTHON": python}} if (
            served == "stdio") else {}
        with client_over(served, door, "tests.server.compose_front", version,
                         **options) as client:
            names = {t.name for t in client.list_tools()}
            assert {"hello", "remote_add", "remote_steps", "official_add",
                    "official_count"} <= names, names
            assert client.call_tool("hello", {"name": "Al"}).text == "hello Al"
            assert client.call_tool("remote_add", {"a": 2, "b": 3}).structured_content == {
                "result": 5}
            assert client.call_tool("official_count", {"n": 2},
                                    on_progress=progress.append).text == "counted 2"
            assert [p.progress for p in progress] == [1, 2]
            # Resources: the prefix goes after the scheme's "://", both ways.
            readme = client.read_resource("mem://remote/readme")
            assert readme.contents[0].text == "read me"
            assert readme.contents[0].uri == "mem://remote/readme"
            hello = client.read_resource("greeting://official/people/Bo")
            assert hello.contents[0].text == "Hello, Bo"
            prompt = client.get_prompt("official_review", {"topic": "t"})
            assert prompt.messages[0].content.text == "Please review t."
    finally:
        door.stop()


@pytest.mark.parametrize("version", ERAS)
def test_a_remote_list_change_crosses_the_proxy_and_the_mount(version: str) -> None:
    from .proxy_remote import Remote

    remote = Remote()
    door = Server("door", request_state_key=b"door-test-key")
    door.mount(Server.proxy(remote.server, name="inner", timeout=30,
                            server_options={"request_state_key": b"inner-test-key"}),
               prefix="inner")
    notes: queue.Queue[str] = queue.Queue()
    try:
        with (client_over("memory", door, "", version) as client,
              client.listen(prompts=False, resources=False,
                            on_notification=lambda note: notes.put(note.method))):
            assert "inner_add" in {t.name for t in client.list_tools()}
            remote.server.tool("late")(lambda: "late")
            assert notes.get(timeout=10) == "notifications/tools/list_changed"
            assert "inner_late" in {t.name for t in client.list_tools()}
    finally:
        door.stop()
