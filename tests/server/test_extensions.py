"""Extensions (``ServerCore.use``) and the server's classes (issue 29): ``mcpsync.Server`` is
``ServerCore`` with the tasks extension and HTTP serving added above it. A bare core serves
no tasks until it uses ``Tasks()``; an extension changes a built-in by wrapping it
(``wrap_method``), so the order of ``use``, ``mount`` and the built-ins decides only the
nesting; ``Server`` keeps every option of the core, with the same defaults."""

from __future__ import annotations

import inspect

import pytest

from mcpsync import Client, DuplicateHandlerError, HandlerContext, Server
from mcpsync.server.server import ServerCore
from mcpsync.tasks import EXTENSION, Tasks

MODERN = "2026-07-28"


def test_server_keeps_every_option_of_the_core_with_its_default():
    core = inspect.signature(ServerCore.__init__).parameters
    full = inspect.signature(Server.__init__).parameters
    for name, parameter in core.items():
        assert name in full, f"Server(...) lost the option {name}"
        assert full[name].default == parameter.default, name
        assert full[name].kind == parameter.kind, name
    assert set(full) - set(core) == {"task_store", "task_executor", "task_options"}


def test_a_core_has_no_tasks_and_no_http_until_told():
    core = ServerCore("core")
    assert isinstance(Server("full"), ServerCore)
    assert not hasattr(core, "wsgi_app") and not hasattr(core, "close_tasks")
    assert "extensions" not in core._capabilities_for(MODERN)
    assert core.methods.request_handler("tasks/get") is None
    assert EXTENSION in Server("full")._capabilities_for(MODERN)["extensions"]


def test_a_core_that_uses_tasks_runs_a_task_tool_as_a_task():
    core = ServerCore("core")
    with pytest.raises(TypeError, match=r"'task'.*permission, tags"):
        core.tool(task="optional")  # the option is the extension's: not declared yet
    tasks = core.use(Tasks())

    @core.tool(task="optional")
    def double(ctx: HandlerContext, n: int) -> int:
        return n * 2

    assert core._extensions.identifiers == {EXTENSION}
    with Client.memory(core, protocol_version=MODERN) as client:
        assert client.task_surface == "v2"
        assert client.call_tool("double", {"n": 2}).structured_content == {"result": 4}
    records, _ = tasks.store.list("")
    assert [r.tool for r in records] == ["double"]
    assert tasks.close(5.0)
    with pytest.raises(ValueError, match=EXTENSION):
        core.use(Tasks())


def test_a_mount_made_before_the_tasks_extension_still_routes_and_runs_tasks():
    parent, child = ServerCore("parent"), ServerCore("child")

    @child.tool()
    def hello() -> str:
        return "hi"

    parent.mount(child, "kid")
    tasks = parent.use(Tasks())  # wraps the mount's router: both still serve

    @parent.tool(task="optional")
    def double(ctx: HandlerContext, n: int) -> int:
        return n * 2

    with Client.memory(parent, protocol_version=MODERN) as client:
        assert client.call_tool("kid_hello").content[0].text == "hi"
        assert client.call_tool("double", {"n": 3}).structured_content == {"result": 6}
    assert [r.tool for r in tasks.store.list("")[0]] == ["double"]
    parent.stop()


def test_a_wrapped_built_in_stays_a_built_in_and_a_wrapped_custom_handler_stays_custom():
    server = ServerCore("wrapped")
    seen: list[str] = []

    def wrapper(handler):
        def wrapped(ctx, params):
            seen.append(ctx.method)
            return handler(ctx, params)
        return wrapped

    server.wrap_method("ping", wrapper)
    assert server.methods.is_default("ping")
    with Client.memory(server) as client:
        client.ping()
    assert seen == ["ping"]
    server.method_handler("ping")(lambda ctx, params: {})  # replaces it, as a built-in
    server.method_handler("x/y")(lambda ctx, params: {"y": 1})
    server.wrap_method("x/y", wrapper)
    assert not server.methods.is_default("x/y")
    with pytest.raises(DuplicateHandlerError):
        server.method_handler("x/y")(lambda ctx, params: {})
    with pytest.raises(KeyError):
        server.wrap_method("not/there", wrapper)


def test_stop_closes_the_extensions_and_raises_what_one_raised_after_closing_all():
    closed: list[str] = []

    class Probe:
        def __init__(self, name: str, fails: bool = False) -> None:
            self.identifier = name
            self.fails = fails

        def install(self, server):
            pass

        def add_capabilities(self, version, capabilities):
            pass

        def close(self, timeout):
            closed.append(self.identifier)
            if self.fails:
                raise RuntimeError("boom")
            return True

    server = ServerCore("probed")
    server.use(Probe("a"))
    server.use(Probe("b", fails=True))
    with pytest.raises(RuntimeError, match="boom"):
        server.stop()
    assert closed == ["b", "a"]  # last installed first, and every one
