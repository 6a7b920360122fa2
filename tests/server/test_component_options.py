"""Extensions own their options (issue 34): a third-party extension declares a per-tool
option, gets it validated at registration, and reads it back at call and list time; the
tasks extension's keywords are declared by it, not by the core."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, MCPError, Server
from mcpsync.server.component_options import Kind, OptionSpec
from mcpsync.server.server import ServerCore
from mcpsync.tasks import Tasks
from mcpsync.tasks.tool_options import TaskTool, task_tool
from tests.helpers import WAIT

Handler = Callable[[HandlerContext, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Quota:
    calls: int


class Quotas:
    """An extension of a user's own: ``@server.tool(quota=2)`` allows two calls."""

    identifier = "example.com/quotas"

    def __init__(self) -> None:
        self.used: dict[str, int] = {}
        self.server: ServerCore | None = None

    def install(self, server: ServerCore) -> None:
        self.server = server
        server.declare_options(OptionSpec("quotas", frozenset({"quota"}),
                                          frozenset({"tool", "prompt"}), self._parse,
                                          self._describe))
        server.wrap_method("tools/call", self._call)

    def _parse(self, kind: Kind, given: dict[str, Any]) -> Quota:
        calls = given["quota"]
        if not isinstance(calls, int) or calls < 1:
            raise ValueError(f"quota= is a positive number of calls, not {calls!r}")
        return Quota(calls)

    def _describe(self, kind: Kind, value: Quota, wire: dict[str, Any]) -> None:
        wire.setdefault("_meta", {})["example.com/quota"] = value.calls

    def _call(self, inner: Handler) -> Handler:
        def call(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            assert self.server is not None
            tool = self.server.tools.find(str(params.get("name")), ctx)
            quota = tool.options.get("quotas") if tool is not None else None
            if isinstance(quota, Quota):
                used = self.used.get(tool.name, 0) + 1  # type: ignore[union-attr]
                if used > quota.calls:
                    raise MCPError("quota exhausted", code=-32000)
                self.used[tool.name] = used  # type: ignore[union-attr]
            return inner(ctx, params)

        return call

    def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
        capabilities["extensions"] = {**capabilities.get("extensions", {}),
                                      self.identifier: {}}

    def close(self, timeout: float) -> bool:
        return True


def test_a_third_party_extension_declares_an_option_and_reads_it_back() -> None:
    server = Server("quota")
    quotas = server.use(Quotas())

    @server.tool(quota=2)
    def limited() -> str:
        return "ok"

    @server.tool()
    def free() -> str:
        return "ok"

    @server.prompt(quota=1)
    def greeting() -> str:
        return "hi"

    assert server.tools.get("limited").options["quotas"] == Quota(2)  # type: ignore[union-attr]
    assert "quotas" not in server.tools.get("free").options  # type: ignore[union-attr]
    with Client.memory(server, timeout=WAIT) as client:
        (listed,) = [t for t in client.list_tools() if t.name == "limited"]
        assert listed.meta == {"example.com/quota": 2}
        assert client.call_tool("limited").text == "ok"
        assert client.call_tool("limited").text == "ok"
        with pytest.raises(MCPError, match="quota exhausted"):
            client.call_tool("limited")
        for _ in range(3):
            assert client.call_tool("free").text == "ok"
    assert quotas.used == {"limited": 2}
    with pytest.raises(ValueError, match="quota="):
        server.tool(quota=0)
    with pytest.raises(TypeError, match="'quota'"):
        server.resource("x://y", quota=1)  # declared for tools and prompts only


def test_two_extensions_cannot_declare_the_same_keyword() -> None:
    server = Server("clash")
    with pytest.raises(ValueError, match=r"'task'.*'tasks'"):
        server.declare_options(OptionSpec("mine", frozenset({"task"}), frozenset({"tool"}),
                                          lambda kind, given: None))
    with pytest.raises(ValueError, match="declared already"):
        server.declare_options(OptionSpec("tasks", frozenset({"other"}), frozenset({"tool"}),
                                          lambda kind, given: None))


def test_the_task_keywords_belong_to_the_tasks_extension() -> None:
    core = ServerCore("core")
    with pytest.raises(TypeError, match="'defer_task', 'task'"):
        core.add_tool(lambda: 1, name="t", task="optional", defer_task=True)
    core.use(Tasks())
    core.add_tool(lambda: 1, name="t", task="optional", defer_task=True)
    core.add_tool(lambda: 1, name="plain")
    tool = core.tools.get("t")
    assert tool is not None and task_tool(tool.options) == TaskTool("optional", defer=True)
    assert tool.description["execution"] == {"taskSupport": "optional"}
    plain = core.tools.get("plain")
    assert plain is not None and task_tool(plain.options) is None
    assert "execution" not in plain.description
    with pytest.raises(ValueError, match="task must be"):
        core.add_tool(lambda: 1, name="u", task="sometimes")
    with pytest.raises(ValueError, match="retry_safe"):
        core.add_tool(lambda: 1, name="v", retry_safe=True)
    # A revision without tasks does not see execution (the extension strips it).
    with Client.memory(core, protocol_version="2025-06-18", timeout=WAIT) as old:
        assert all(t.execution is None for t in old.list_tools())
    with Client.memory(core, protocol_version="2025-11-25", timeout=WAIT) as new:
        assert {t.name: t.execution for t in new.list_tools()}["t"] == {
            "taskSupport": "optional"}


def test_a_result_type_is_kept_only_when_an_extension_in_use_declared_it() -> None:
    """2026-07-28: ``resultType`` is "complete" unless an extension declared the value
    (the tasks extension: "task"); the core knows no extension's result types."""
    from mcpsync.http import McpWsgiApp
    from tests.http.raw import answer_of, post_modern
    from tests.serving import RunningServer

    core = ServerCore("core")

    @core.method_handler("example/odd")
    def odd(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        return {"resultType": "pending"}

    class Pending:
        identifier = None
        result_types = frozenset({"pending"})

        def install(self, server: ServerCore) -> None:
            pass

        def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
            pass

        def close(self, timeout: float) -> bool:
            return True

    app = McpWsgiApp(core, path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        assert answer_of(post_modern(url, "example/odd", {}))["result"]["resultType"] == (
            "complete")
        pending = core.use(Pending())
        assert answer_of(post_modern(url, "example/odd", {}))["result"]["resultType"] == (
            "pending")
    core._extensions.remove(pending)
    assert core._extensions.result_types == frozenset()
    assert Server("full")._extensions.result_types == {"task"}
