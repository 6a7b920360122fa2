"""mcpsync's Client following tasks on real TypeScript servers, over stdio and HTTP:

* v1 (2025-11-25): ``servers/tasks_v1_server.cjs``, the TypeScript SDK 1.32 with its
  experimental tasks API and in-memory task store (the client sends ``params.task`` for a
  ``taskSupport: "required"`` tool; questions travel on ``tasks/result``);
* v2 (``io.modelcontextprotocol/tasks``): ``servers/tasks_v2_server.cjs``, the SDK v2 server
  (2026-07-28) whose task replies are checked with ``@modelcontextprotocol/ext-tasks``'s
  guards (the server decides; questions are ``inputRequests`` answered with ``tasks/update``).

Both peers have a ``report`` tool listing every task they created with its status, which is
how these tests see what the client did to a task on the server.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, ElicitResult, HostHandlers, MCPError, RequestTimeoutError
from mcpsync.client.tasks import TaskCancelledError, TaskHandle, TaskState
from tests.helpers import WAIT
from tests.interop import peers
from tests.serving import free_port, wait_for_port

pytestmark = pytest.mark.interop
SERVERS = Path(__file__).with_name("servers")
SCRIPTS = {"v1": "tasks_v1_server.cjs", "v2": "tasks_v2_server.cjs"}
#: The npm packages the two peers load (pinned in scripts/install-peers).
PACKAGES = ("sdk", "server", "ext-tasks")


def _npm_modules() -> str:
    root = peers.peers_dir() / "npm" / "node_modules"
    for package in PACKAGES:
        if not (root / "@modelcontextprotocol" / package / "package.json").is_file():
            raise peers.PeerMissing(f"@modelcontextprotocol/{package} not found under {root} "
                                    f"({peers.INSTALL_HINT})")
    return str(root)


@pytest.fixture(scope="module")
def node_env(node22: str) -> dict[str, str]:
    return {**peers.node_env(), "NODE_PATH": peers.require(_npm_modules)}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def http_urls(node22: str, node_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """One HTTP server per surface for the whole module."""
    procs, urls = [], {}
    try:
        for surface, script in SCRIPTS.items():
            port = free_port()
            proc = subprocess.Popen([node22, str(SERVERS / script), "--http", str(port)],
                                    env=node_env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            procs.append(proc)
            wait_for_port(port, proc=proc)
            urls[surface] = f"http://127.0.0.1:{port}/mcp"
        yield urls
    finally:
        for proc in procs:
            _stop(proc)


def _answer_name(params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


Connect = Callable[..., Client]


@pytest.fixture(params=["v1-stdio", "v1-http", "v2-stdio", "v2-http"])
def connect(request: pytest.FixtureRequest, node22: str,
            node_env: dict[str, str]) -> Iterator[Connect]:
    """``connect(**options)``: a new Client to the peer (stdio: its own server process)."""
    surface, transport = request.param.split("-")
    opened: list[Client] = []

    def make(**options: Any) -> Client:
        options.setdefault("timeout", WAIT)
        options.setdefault("host", HostHandlers(elicitation=_answer_name))
        if transport == "stdio":
            client = Client.stdio([node22, str(SERVERS / SCRIPTS[surface])], env=node_env,
                                  protocol_version="auto", **options)
        else:
            urls = request.getfixturevalue("http_urls")
            client = Client.http(urls[surface], **options)
        opened.append(client)
        return client

    make.surface = surface  # type: ignore[attr-defined]
    make.transport = transport  # type: ignore[attr-defined]
    yield make
    for client in opened:
        client.close()


def _report(client: Client) -> dict[str, str]:
    statuses: dict[str, str] = json.loads(client.call_tool("report").text)
    return statuses


def _new_task(before: dict[str, str], after: dict[str, str]) -> str:
    fresh = [task_id for task_id in after if task_id not in before]
    assert len(fresh) == 1, (before, after)
    return fresh[0]


# -- transparent --------------------------------------------------------------------------


def test_the_client_picks_the_surface_the_server_offers(connect: Connect) -> None:
    client = connect()
    assert client.task_surface == connect.surface  # type: ignore[attr-defined]
    assert client.protocol_version == ("2025-11-25" if connect.surface == "v1"  # type: ignore[attr-defined]
                                       else "2026-07-28")


def test_call_tool_follows_a_task_to_its_result(connect: Connect) -> None:
    client = connect()
    before = _report(client)
    result = client.call_tool("slow", {"seconds": 0.2, "text": "x"})
    assert result.text == "done: x" and not result.is_error
    assert _report(client)[_new_task(before, _report(client))] == "completed"


def test_call_tool_answers_the_tasks_question_with_the_elicitation_handler(
        connect: Connect) -> None:
    asked: list[Any] = []

    def answer(params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"name": "Grace"})

    client = connect(host=HostHandlers(elicitation=answer))
    assert client.call_tool("ask").text == "hello Grace"
    assert [params.message for params in asked] == ["Your name?"]


def test_a_failed_task_raises_or_returns_as_a_plain_call_would(connect: Connect) -> None:
    client = connect()
    if connect.surface == "v2":  # type: ignore[attr-defined]
        with pytest.raises(MCPError) as caught:
            client.call_tool("fail")
        assert caught.value.code == -32603 and caught.value.message == "the job broke"
        tool_error = client.call_tool("oops")  # a tool error is a completed task
        assert tool_error.is_error and tool_error.text == "tool error"
    else:  # v1: a failed task's tasks/result is the tool's isError result
        result = client.call_tool("fail")
        assert result.is_error and result.text == "the job broke"


def test_timeout_cancels_the_task_on_the_server(connect: Connect) -> None:
    client = connect()
    before = _report(client)
    with pytest.raises(RequestTimeoutError):
        client.call_tool("slow", {"seconds": 120}, timeout=1.0)
    after = _report(client)
    assert after[_new_task(before, after)] == "cancelled"


def test_ctrl_c_cancels_the_task_on_the_server(connect: Connect) -> None:
    client = connect()
    before = _report(client)
    stop = threading.Event()

    def interrupt_once_working() -> None:
        while not stop.wait(0.05):
            now = _report(client)  # the client is thread-safe: ask beside the waiting call
            if any(status == "working" for task, status in now.items() if task not in before):
                os.kill(os.getpid(), signal.SIGINT)
                return

    watcher = threading.Thread(target=interrupt_once_working, name="t-interrupter")
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("slow", {"seconds": 120}, timeout=WAIT)
    finally:
        stop.set()
        watcher.join(WAIT)
    after = _report(client)
    assert after[_new_task(before, after)] == "cancelled"


def test_a_plain_tool_is_not_made_a_task(connect: Connect) -> None:
    client = connect()
    before = _report(client)
    name = "plain" if connect.surface == "v1" else "greet"  # type: ignore[attr-defined]
    assert client.call_tool(name, {"text": "x", "name": "x"}).text in ("plain: x", "Hello, x!")
    assert _report(client) == before


# -- explicit -----------------------------------------------------------------------------


def test_start_task_status_result(connect: Connect) -> None:
    client = connect()
    handle = client.start_task("slow", {"seconds": 0.3, "text": "later"}, ttl=60)
    assert isinstance(handle, TaskHandle) and handle.id
    assert handle.surface == connect.surface  # type: ignore[attr-defined]
    assert handle.status().status in ("working", "completed")
    assert repr(handle).startswith(f"<TaskHandle {handle.id!r} {handle.surface} status=")
    assert handle.result(timeout=WAIT).text == "done: later"
    assert handle.status().status == "completed"
    assert handle.result().text == "done: later"  # kept: asking again costs nothing


def test_cancel_then_result_raises_cancelled(connect: Connect) -> None:
    client = connect()
    handle = client.start_task("slow", {"seconds": 120})
    handle.cancel()
    assert handle.status().status == "cancelled"
    with pytest.raises(TaskCancelledError):
        handle.result()
    handle.cancel()  # a terminal task: nothing to do, no error
    assert _report(client)[handle.id] == "cancelled"  # type: ignore[index]


def test_result_timeout_leaves_the_task_running(connect: Connect) -> None:
    client = connect()
    handle = client.start_task("slow", {"seconds": 120})
    with pytest.raises(RequestTimeoutError):
        handle.result(timeout=0.5)
    assert handle.status().status == "working"
    handle.cancel()


def test_wait_reports_every_status_and_answers_questions(connect: Connect) -> None:
    client = connect()
    seen: list[TaskState] = []
    handle = client.start_task("ask")
    final = handle.wait(on_status=seen.append)
    assert final.status == "completed"
    statuses = [state.status for state in seen]
    assert statuses[-1] == "completed" and "input_required" in statuses
    changes = [(state.status, state.status_message) for state in seen]
    assert all(a != b for a, b in itertools.pairwise(changes))  # changes only
    assert handle.result().text == "hello Ada"


def test_reattach_by_id(connect: Connect) -> None:
    client = connect()
    handle = client.start_task("slow", {"seconds": 0.3, "text": "again"})
    same = client.task(handle.id)  # type: ignore[arg-type]
    assert same.id == handle.id and same.result().text == "done: again"
    with pytest.raises(MCPError) as caught:
        client.task("no-such-task")
    assert caught.value.code == -32602


def test_reattach_from_a_second_client(connect: Connect) -> None:
    """A new Client (a restarted notebook kernel) re-attaches by id. Over stdio a second
    client is a second server; the v1 peer binds tasks to their session (the SDK's store
    does), so only v2 over HTTP can show it here."""
    if connect.transport == "stdio" or connect.surface == "v1":  # type: ignore[attr-defined]
        client = connect()
        handle = client.start_task("slow", {"seconds": 0.2})
        other = connect()
        with pytest.raises(MCPError):  # another session: not found, never someone's task
            other.task(handle.id)  # type: ignore[arg-type]
        return
    first = connect()
    task_id = first.start_task("slow", {"seconds": 0.3, "text": "kept"}).id
    first.close()
    second = connect()
    assert second.task(task_id).result().text == "done: kept"  # type: ignore[arg-type]


def test_server_everything_research_task_with_a_clarifying_question(
        everything_stdio_cmd: list[str]) -> None:
    """The reference server's own v1 task tool: ``taskSupport: "required"``, and an ambiguous
    topic makes it ask (an elicitation queued on ``tasks/result``) mid-task."""
    asked: list[Any] = []

    def clarify(params: Any) -> ElicitResult:
        asked.append(params)
        options = params.requested_schema["properties"]["interpretation"]["oneOf"]
        return ElicitResult(action="accept", content={"interpretation": options[0]["const"]})

    with Client.stdio(everything_stdio_cmd, timeout=WAIT,
                      host=HostHandlers(elicitation=clarify)) as client:
        assert client.task_surface == "v1"
        result = client.call_tool("simulate-research-query",
                                  {"topic": "python", "ambiguous": True})
    assert not result.is_error and "Research Report" in result.text
    assert len(asked) == 1 and "Clarification" in result.text
