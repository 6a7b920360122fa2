"""``Server.proxy``: a server whose tools, resources and prompts are a remote server's.

The remote is a real stdio subprocess, a real HTTP server or a Server in this process; the
proxy's client and the proxy's own callers each speak 2026-07-28 or 2025-11-25.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import (
    Client,
    CreateMessageResult,
    ElicitResult,
    HandlerContext,
    HostHandlers,
    Root,
    Server,
    TextContent,
)
from mcpsync.errors import MCPError, RequestTimeoutError
from tests.helpers import run_threads, wait_until
from tests.interop import peers
from tests.serving import ROOT, RunningServer, client_over

from .proxy_remote import Remote

ERAS = ("2025-11-25", "2026-07-28")
REMOTE_COMMAND = [sys.executable, "-m", "tests.server.proxy_remote"]
OFFICIAL_SERVER = ROOT / "tests" / "interop" / "servers" / "official_server.py"


@contextlib.contextmanager
def proxy_of(kind: str, version: str, **options: Any) -> Iterator[tuple[Server, Remote]]:
    """A proxy of a fresh remote reached over ``kind`` (memory, stdio, http) in ``version``;
    stopped (its client closed) afterwards. The Remote's events only work in memory."""
    remote = Remote()
    options.setdefault("timeout", 30)
    with contextlib.ExitStack() as stack:
        if kind == "memory":
            target: Any = remote.server
        elif kind == "stdio":
            target = REMOTE_COMMAND
            options.setdefault("cwd", ROOT)
        else:
            app = remote.server.wsgi_app(path="/mcp")
            running = stack.enter_context(RunningServer(app, on_stop=app.close))
            target = running.base + "/mcp"
        proxy = Server.proxy(target, name="front", protocol_version=version,
                             server_options={"request_state_key": b"proxy-test-key"},
                             **options)
        stack.callback(proxy.stop)
        yield proxy, remote


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_everything_is_forwarded(kind: str, inner: str, outer: str) -> None:
    logs: list[Any] = []
    with (proxy_of(kind, inner) as (proxy, _),
          Client.memory(proxy, protocol_version=outer, on_log=logs.append) as client):
        assert client.server_info.name == "front"
        assert client.instructions == "the remote's instructions"
        caps = client.server_capabilities
        assert {"tools", "resources", "prompts", "completions"} <= set(caps)
        tools = {t.name: t for t in client.list_tools()}
        assert {"add", "steps", "ask", "wait", "refuse"} <= set(tools)
        assert tools["add"].description == "Add two numbers."
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        assert [r.uri for r in client.list_resources()] == ["mem://readme"]
        assert [t.uri_template for t in client.list_resource_templates()] == [
            "mem://items/{item}"]
        assert client.read_resource("mem://readme").contents[0].text == "read me"
        assert client.read_resource("mem://items/7").contents[0].text == "item 7"
        assert client.get_prompt("review", {"topic": "x"}).messages[0].content.text == (
            "Please review x.")
        assert client.complete("review", "topic", "ap").values == ["apples", "apricots"]
        # Progress and log lines of the remote reach the proxy's caller, during the call.
        seen: list[Any] = []
        assert client.call_tool("steps", {"n": 3}, on_progress=seen.append).text == "3 steps"
        assert [(p.progress, p.total, p.message) for p in seen] == [
            (1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert [(m.level, m.logger, m.data) for m in logs] == [
            ("info", "remote", f"step {i}") for i in (1, 2, 3)]


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_errors_keep_their_code_and_tool_errors_stay_results(inner: str, outer: str) -> None:
    with (proxy_of("memory", inner) as (proxy, _),
          Client.memory(proxy, protocol_version=outer) as client):
        with pytest.raises(MCPError) as refused:
            client.call_tool("refuse", {"what": "thing"})
        assert (refused.value.code, refused.value.message, refused.value.data) == (
            -32602, "Invalid params: no thing", {"what": "thing"})
        with pytest.raises(MCPError) as unknown:
            client.call_tool("nothing-here")
        assert unknown.value.code == -32602 and "nothing-here" in unknown.value.message
        with pytest.raises(MCPError) as bad_args:
            client.get_prompt("review")  # the remote's -32602 for a missing argument
        assert bad_args.value.code == -32602
        result = client.call_tool("broken")
        assert result.is_error and "the tool broke" in result.text


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_an_elicitation_reaches_the_outer_client_and_its_answer_the_remote(
        inner: str, outer: str) -> None:
    asked: list[Any] = []

    def elicit(params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult("accept", {"name": "Ada"})

    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version=outer,
                        host=HostHandlers(elicitation=elicit)) as client):
        assert client.call_tool("ask").text == "hello Ada"
        assert asked == ["Your name?"]
        assert remote.answers[-1] == {"name": "Ada"}


@pytest.mark.parametrize("outer", ERAS)
def test_an_elicitation_through_a_stdio_remote(outer: str) -> None:
    def decline(params: Any) -> dict[str, Any]:
        return {"action": "decline"}

    with (proxy_of("stdio", "2025-11-25") as (proxy, _),
          Client.memory(proxy, protocol_version=outer,
                        host=HostHandlers(elicitation=decline)) as client):
        assert client.call_tool("ask").text == "no name (decline)"


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_a_caller_without_elicitation_is_not_asked(inner: str, outer: str) -> None:
    with (proxy_of("memory", inner) as (proxy, _),
          Client.memory(proxy, protocol_version=outer) as client):
        if inner == "2026-07-28":
            # A 2026-07-28 remote can not be told "no": the call fails, with -32021 for a
            # 2026-07-28 caller (what its request lacked), else -32603 saying so.
            with pytest.raises(MCPError) as missing:
                client.call_tool("ask")
            assert missing.value.code == (-32021 if outer == "2026-07-28" else -32603)
            assert "elicitation" in missing.value.message
        else:
            # The remote's question is refused; its tool fails as it sees fit.
            result = client.call_tool("ask")
            assert result.is_error


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_cancelling_the_call_cancels_the_remote_call(inner: str, outer: str) -> None:
    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version=outer) as client):
        with pytest.raises(RequestTimeoutError):
            client.call_tool("wait", timeout=0.5)  # the client then cancels it
        assert remote.cancelled.wait(10), "the remote call was not cancelled"
        assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_cancelling_reaches_a_stdio_remote(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    with (proxy_of("stdio", "2025-11-25") as (proxy, _),
          Client.memory(proxy, protocol_version="2025-11-25") as client):
        with pytest.raises(RequestTimeoutError):
            client.call_tool("wait", {"marker": str(marker)}, timeout=1.0)
        wait_until(marker.exists, timeout=10, message="the remote never saw the cancel")


@pytest.mark.parametrize("inner", ERAS)
def test_a_remote_that_dies_fails_the_call_and_is_started_again(inner: str) -> None:
    with (proxy_of("stdio", inner) as (proxy, _),
          Client.memory(proxy, protocol_version="2025-11-25") as client):
        first = client.call_tool("pid").structured_content
        with pytest.raises(MCPError) as died:
            client.call_tool("die")
        assert died.value.code == -32603
        # Where the remote is (its command line) is not the caller's to know.
        assert "tests.server.proxy_remote" not in died.value.message
        # The next call finds the remote gone (or connects again): never a hang.
        second: Any = None
        for _ in range(2):
            try:
                second = client.call_tool("pid").structured_content
                break
            except MCPError as exc:
                assert exc.code == -32603
        assert second is not None and second != first


def test_a_remote_that_can_not_be_started_fails_startup_clearly() -> None:
    from mcpsync import StartupError

    proxy = Server.proxy(["/nonexistent/mcp-server-binary"], timeout=5)
    with pytest.raises(StartupError) as failed:
        proxy.start()
    # The operator's exception chain and log name the command; the message does not.
    cause = failed.value.__cause__
    assert cause is not None and "/nonexistent/mcp-server-binary" in str(cause.__cause__)


def test_concurrent_calls_share_one_remote() -> None:
    with (proxy_of("stdio", "2026-07-28") as (proxy, _),
          Client.memory(proxy, protocol_version="2025-11-25") as client):
        pids = run_threads(lambda n: client.call_tool("pid").structured_content["result"],
                           8, name="t-proxy", timeout=30)
        sums = run_threads(lambda n: client.call_tool("add", {"a": n, "b": 1})
                           .structured_content["result"], 8, name="t-proxy-add", timeout=30)
    assert len(set(pids)) == 1
    assert sums == [n + 1 for n in range(8)]


def test_bad_targets_are_refused_at_once() -> None:
    with pytest.raises(TypeError):
        Server.proxy(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Server.proxy("")
    with pytest.raises(TypeError):
        Server.proxy([sys.executable, 3])  # type: ignore[list-item]


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("served", ["stdio", "http"])
def test_the_proxy_served_over_a_transport(served: str, outer: str) -> None:
    proxy = Server.proxy(REMOTE_COMMAND, name="front", cwd=ROOT, timeout=30,
                         server_options={"request_state_key": b"proxy-test-key"})
    try:
        seen: list[Any] = []
        with client_over(served, proxy, "tests.server.proxy_front", outer,
                         host=HostHandlers(
                             elicitation=lambda p: ElicitResult("accept", {"name": "Bo"})),
                         ) as client:
            assert client.server_info.name == "front"
            assert client.call_tool("add", {"a": 4, "b": 5}).structured_content == {
                "result": 9}
            assert client.call_tool("steps", {"n": 2}, on_progress=seen.append).text == (
                "2 steps")
            assert [p.progress for p in seen] == [1, 2]
            assert client.call_tool("ask").text == "hello Bo"
            assert client.read_resource("mem://readme").contents[0].text == "read me"
    finally:
        proxy.stop()


@pytest.mark.interop
@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_a_proxy_of_the_official_sdk_server(inner: str, outer: str) -> None:
    python = peers.require(peers.official_python)
    proxy = Server.proxy([python, str(OFFICIAL_SERVER)], protocol_version=inner, timeout=30,
                         server_options={"request_state_key": b"proxy-test-key"})
    # The SDK's ctx.elicit needs the handshake era's back-channel; its resolvers ask in both.
    ask = "ask" if inner == "2025-11-25" else "ask_resolved"
    try:
        seen: list[Any] = []
        with Client.memory(proxy, protocol_version=outer,
                           host=HostHandlers(elicitation=lambda p: ElicitResult("accept",
                                                                                {"name": "Ada"})),
                           ) as client:
            assert {"ask", "add", "count"} <= {t.name for t in client.list_tools()}
            assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {
                "result": 3}
            assert client.call_tool("count", {"n": 2}, on_progress=seen.append).text == (
                "counted 2")
            assert [p.progress for p in seen] == [1, 2]
            assert client.call_tool(ask).text == "Ada (30)"
            assert client.read_resource("greeting://hello").contents[0].text == (
                "Hello from the official SDK")
            assert client.read_resource("greeting://people/Bo").contents[0].text == (
                "Hello, Bo")
            assert client.get_prompt("review", {"topic": "t"}).messages[0].content.text == (
                "Please review t.")
            with pytest.raises(MCPError) as unknown:
                client.read_resource("greeting://nowhere")
            assert unknown.value.code in (-32602, -32002)
    finally:
        proxy.stop()


@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_the_remote_list_changes_reach_the_proxy_clients(inner: str, outer: str) -> None:
    import queue

    notes: queue.Queue[str] = queue.Queue()
    with (proxy_of("memory", inner) as (proxy, remote),
          Client.memory(proxy, protocol_version=outer) as client,
          client.listen(prompts=False, resources=False,
                        on_notification=lambda note: notes.put(note.method))):
        remote.server.tool("late")(lambda: "late")
        assert notes.get(timeout=10) == "notifications/tools/list_changed"
        assert "late" in {t.name for t in client.list_tools()}


@pytest.mark.parametrize("outer", ERAS)
def test_roots_and_sampling_questions_reach_the_caller(outer: str) -> None:
    remote = Server("remote", request_state_key=b"k")

    @remote.tool()
    def where(ctx: HandlerContext) -> str:
        roots = ctx.list_roots()
        reply = ctx.sample("Say hi", max_tokens=5)
        return f"{roots[0].uri} {reply.content.text}"

    def sample(params: Any) -> CreateMessageResult:
        return CreateMessageResult("assistant", TextContent("hi"), model="m")

    proxy = Server.proxy(remote, protocol_version="2025-11-25",
                         server_options={"request_state_key": b"k"})
    try:
        with Client.memory(proxy, protocol_version=outer, host=HostHandlers(sampling=sample,
                           roots=[Root("file:///work")])) as client:
            assert client.call_tool("where").text == "file:///work hi"
    finally:
        proxy.stop()
