"""mcpsync's task client against mcpsync's own task server (``tests.tasks.client_task_server``):
in memory, on a stdio subprocess and over real HTTP, in 2026-07-28 and in the handshake era.

The client declares the ``io.modelcontextprotocol/tasks`` extension in both eras, and the
server advertises it in both, so these follow v2 tasks everywhere (the v1 surface is
followed against the TypeScript SDK in ``tests/interop/test_tasks_client.py``). What the
task tools saw on the server (started, done, cancelled) comes back through its ``report``
tool, the same way on every transport.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import (
    Client,
    CreateMessageResult,
    ElicitResult,
    HostHandlers,
    MCPError,
    ProtocolStateError,
    RequestTimeoutError,
    Root,
    TaskCancelledError,
    TaskHandle,
    TaskState,
    TextContent,
)
from tests.helpers import WAIT, run_threads, wait_until
from tests.serving import RunningServer
from tests.tasks.client_task_server import server

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ROOT = Path(__file__).resolve().parents[2]
COMBOS = [(kind, era) for kind in ("memory", "stdio", "http") for era in (MODERN, LEGACY)]

Connect = Callable[..., contextlib.AbstractContextManager[Client]]


def _name(params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def _model(params: Any) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")


@pytest.fixture(scope="module")
def http_base() -> Iterator[str]:
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


@pytest.fixture(params=COMBOS, ids=[f"{kind}-{era}" for kind, era in COMBOS])
def connect(request: pytest.FixtureRequest) -> Connect:
    kind, era = request.param

    @contextlib.contextmanager
    def make(**options: Any) -> Iterator[Client]:
        options.setdefault("timeout", WAIT)
        options.setdefault("host", HostHandlers(elicitation=_name, sampling=_model,
                                                roots=[Root(uri="file:///tmp/a")]))
        if kind == "memory":
            with Client.memory(server, protocol_version=era, **options) as client:
                yield client
        elif kind == "stdio":
            command = [sys.executable, "-m", "tests.tasks.client_task_server"]
            with Client.stdio(command, cwd=ROOT, protocol_version=era, **options) as client:
                yield client
        else:
            base = request.getfixturevalue("http_base")
            with Client.http(base, protocol_version=era, **options) as client:
                yield client

    make.kind = kind  # type: ignore[attr-defined]
    make.era = era  # type: ignore[attr-defined]
    return make


def _label() -> str:
    return secrets.token_hex(6)


def _outcome(client: Client, label: str) -> str | None:
    outcomes: dict[str, str] = json.loads(client.call_tool("report").text)
    return outcomes.get(label)


def test_the_client_follows_v2_in_both_eras(connect: Connect) -> None:
    with connect() as client:
        assert client.protocol_version == connect.era  # type: ignore[attr-defined]
        assert client.task_surface == "v2"


def test_a_required_task_tool_is_a_plain_looking_call(connect: Connect) -> None:
    with connect() as client:
        label = _label()
        result = client.call_tool("slow", {"seconds": 0.1, "label": label})
        assert result.text == f"done: {label}" and not result.is_error
        assert _outcome(client, label) == "done"


def test_an_optional_task_tool_runs_as_a_task(connect: Connect) -> None:
    with connect() as client:
        assert client.call_tool("maybe", {"text": "x"}).text == "maybe: x"
        handle = client.start_task("maybe", {"text": "y"})
        assert handle.id and handle.result().text == "maybe: y"


def test_questions_are_answered_by_the_clients_handlers(connect: Connect) -> None:
    asked: list[Any] = []

    def answer(params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"name": "Grace"})

    with connect(host=HostHandlers(elicitation=answer, sampling=_model,
                                   roots=[Root(uri="file:///tmp/a")])) as client:
        assert client.call_tool("ask_name").text == "Hello, Grace!"
        assert client.call_tool("ask_model").text == "hi (1 roots)"
    assert [params.message for params in asked] == ["Your name?"]


def test_failed_and_tool_error(connect: Connect) -> None:
    with connect() as client:
        with pytest.raises(MCPError) as caught:
            client.call_tool("crash")
        assert caught.value.code == -32602 and caught.value.data == {"widget": 7}
        result = client.call_tool("tool_error")
        assert result.is_error and result.text == "it broke"


def test_timeout_cancels_the_task_on_the_server(connect: Connect) -> None:
    with connect() as client:
        label = _label()
        with pytest.raises(RequestTimeoutError):
            client.call_tool("slow", {"seconds": 120, "label": label}, timeout=1.0)
        # The runner notices the cancel within its check interval.
        wait_until(lambda: _outcome(client, label) == "cancelled", timeout=WAIT,
                   interval=0.05, message=lambda: _outcome(client, label))


def test_ctrl_c_cancels_the_task_on_the_server(connect: Connect) -> None:
    with connect() as client:
        label = _label()
        stop = threading.Event()

        def interrupt_once_started() -> None:
            while not stop.wait(0.05):
                if _outcome(client, label) == "started":
                    os.kill(os.getpid(), signal.SIGINT)
                    return

        watcher = threading.Thread(target=interrupt_once_started, name="t-interrupter")
        watcher.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                client.call_tool("slow", {"seconds": 120, "label": label})
        finally:
            stop.set()
            watcher.join(WAIT)
        wait_until(lambda: _outcome(client, label) == "cancelled", timeout=WAIT,
                   interval=0.05, message=lambda: _outcome(client, label))


def test_start_task_status_cancel(connect: Connect) -> None:
    with connect() as client:
        label = _label()
        handle = client.start_task("slow", {"seconds": 120, "label": label})
        assert isinstance(handle, TaskHandle) and handle.surface == "v2"
        assert handle.status().status == "working"
        assert repr(handle) == f"<TaskHandle {handle.id!r} v2 status='working'>"
        with pytest.raises(RequestTimeoutError):
            handle.result(timeout=0.3)  # the task goes on
        assert handle.status().status == "working"
        handle.cancel()
        assert handle.status().status == "cancelled"
        with pytest.raises(TaskCancelledError):
            handle.result()
        handle.cancel()  # terminal already: no error


def test_wait_reports_status_changes(connect: Connect) -> None:
    with connect() as client:
        seen: list[TaskState] = []
        handle = client.start_task("ask_name")
        final = handle.wait(on_status=seen.append)
        assert final.status == "completed"
        statuses = [state.status for state in seen]
        assert "input_required" in statuses and statuses[-1] == "completed"
        changes = [(state.status, state.status_message) for state in seen]
        assert all(a != b for a, b in itertools.pairwise(changes))
        assert handle.result().text == "Hello, Ada!"


def test_reattach_by_id(connect: Connect) -> None:
    with connect() as client:
        handle = client.start_task("slow", {"seconds": 0.2, "label": _label()})
        assert client.task(handle.id).result().text.startswith("done: ")  # type: ignore[arg-type]
        with pytest.raises(MCPError) as caught:
            client.task("no-such-task")
        assert caught.value.code == -32602


@pytest.mark.parametrize(  # a second stdio client is a second server process (another store)
    "connect", [c for c in COMBOS if c[0] != "stdio"], indirect=True,
    ids=[f"{kind}-{era}" for kind, era in COMBOS if kind != "stdio"])
def test_reattach_from_a_new_client(connect: Connect) -> None:
    """A restarted kernel: a new Client re-attaches by id. Anonymous 2026-07-28 callers share
    one owner, so any client of the same server process sees the task; a handshake-era task
    belongs to its session, so another session gets "not found" (never someone's task)."""
    label = _label()
    with connect() as first:
        task_id = first.start_task("slow", {"seconds": 0.3, "label": label}).id
    with connect() as second:
        if connect.era == MODERN:  # type: ignore[attr-defined]
            assert second.task(task_id).result().text == f"done: {label}"  # type: ignore[arg-type]
        else:
            with pytest.raises(MCPError) as caught:
                second.task(task_id)  # type: ignore[arg-type]
            assert caught.value.code == -32602


def test_plain_tools_stay_plain(connect: Connect) -> None:
    with connect() as client:
        assert client.call_tool("plain", {"text": "x"}).text == "plain: x"


def test_many_threads_follow_their_tasks_at_once(connect: Connect) -> None:
    with connect() as client:
        labels = [_label() for _ in range(6)]
        results = run_threads(
            lambda i: client.call_tool("slow", {"seconds": 0.2, "label": labels[i]}).text, 6)
        assert results == [f"done: {label}" for label in labels]


def test_subscribe_follows_a_tasks_status_changes(connect: Connect) -> None:
    with connect() as client:
        handle = client.start_task("slow", {"seconds": 0.3, "label": _label()})
        if connect.era == LEGACY:  # type: ignore[attr-defined]
            with pytest.raises(ProtocolStateError):
                handle.subscribe()  # no subscriptions/listen in the handshake era
            handle.cancel()
            return
        with handle.subscribe() as subscription:
            assert subscription.acknowledged == {"taskIds": [handle.id]}
            assert handle.result().text.startswith("done: ")
            statuses = []
            while (note := subscription.get(timeout=WAIT)) is not None:
                assert note.method == "notifications/tasks"
                assert note.params["taskId"] == handle.id
                statuses.append(note.params["status"])
                if note.params["status"] == "completed":
                    break
        assert statuses[-1] == "completed"
