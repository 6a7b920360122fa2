"""Capabilities derived from what is registered: ``resources``, ``prompts`` and
``completions`` only when the server has something of the kind (or a method handler for
it, or ``declare=``), in both eras; a session is only told a list changed when its
``initialize`` declared that kind."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpsync import Client, HostHandlers, ProtocolOptions, Server
from tests.helpers import WAIT, wait_until

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
VERSIONS = [LEGACY, MODERN]
DERIVED = ("resources", "prompts", "completions")


def declared(server: Server, version: str) -> dict[str, Any]:
    with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
        return {k: v for k, v in client.server_capabilities.items() if k in (
            "tools", "logging", *DERIVED)}


@pytest.mark.parametrize("version", VERSIONS)
def test_an_empty_server_declares_only_tools_and_logging(version: str) -> None:
    caps = declared(Server("empty"), version)
    assert set(caps) == {"tools", "logging"}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_kind_appears_with_its_first_registration(version: str) -> None:
    server = Server("grows")

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return name

    assert set(declared(server, version)) == {"tools", "logging", "resources"}

    @server.prompt()
    def hello() -> str:
        return "hi"

    assert set(declared(server, version)) == {"tools", "logging", "resources", "prompts"}

    @server.completer("hello", "x")
    def complete(value: str, context: Any) -> list[str]:
        return []

    assert set(declared(server, version)) == {"tools", "logging", *DERIVED}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_method_handler_or_declare_counts(version: str) -> None:
    server = Server("custom")

    @server.method_handler("resources/read")
    def read(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
        return {"contents": []}

    assert "resources" in declared(server, version)
    later = Server("later", protocol=ProtocolOptions(declare=("prompts",)))
    assert "prompts" in declared(later, version)


def test_declare_refuses_what_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="sampling"):
        Server("typo", protocol=ProtocolOptions(declare=("sampling",)))


def test_list_changed_only_to_sessions_told_the_kind_exists() -> None:
    server = Server("late")
    changed: dict[str, list[str]] = {"early": [], "late": []}
    lock = threading.Lock()

    def client(who: str) -> Client:
        def handler(kind: str) -> Any:
            def on(params: dict[str, Any]) -> None:
                with lock:
                    changed[who].append(kind)
            return on
        return Client.memory(server, protocol_version=LEGACY, timeout=WAIT,
                             host=HostHandlers(notifications={
                                 f"notifications/{kind}/list_changed": handler(kind)
                                 for kind in ("tools", "resources")}))

    def seen(who: str) -> list[str]:
        with lock:
            return list(changed[who])

    with client("early") as early:
        assert "resources" not in early.server_capabilities

        @server.resource("notes://one")
        def one() -> str:
            return "1"

        with client("late") as late:
            assert late.server_capabilities["resources"]["listChanged"] is True
            early.ping()  # answered after notifications/initialized took effect:
            late.ping()   # both sessions can be sent list_changed from now on

            @server.resource("notes://two")
            def two() -> str:
                return "2"

            server.add_tool(lambda: "x", name="x")  # tools: declared to both
            wait_until(lambda: "tools" in seen("early") and "tools" in seen("late"),
                       timeout=WAIT, message=lambda: repr(changed))
            assert seen("late") == ["resources", "tools"]
            assert seen("early") == ["tools"]  # never told resources could change
