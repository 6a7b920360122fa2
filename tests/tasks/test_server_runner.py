"""The task runner's bounds and lifetime: the cap on running tasks, shutdown, and
cancellation that arrives through the store (another worker served ``tasks/cancel``)."""

from __future__ import annotations

from typing import Any

from mcpsync import TaskOptions
from mcpsync.tasks import MemoryTaskStore
from tests.helpers import wait_until
from tests.tasks.peers import WAIT, Peer
from tests.tasks.task_server import make_server


def created(peer: Peer, tool: str, **arguments: Any) -> str:
    result = peer.result("tools/call", {"name": tool, "arguments": arguments})
    assert result["resultType"] == "task", result
    task_id: str = result["taskId"]
    return task_id


def status(peer: Peer, task_id: str) -> str:
    value: str = peer.result("tasks/get", {"taskId": task_id})["status"]
    return value


def test_past_the_cap_a_task_is_refused_at_once_and_nothing_is_stored() -> None:
    server = make_server(task_options=TaskOptions(max_running=1))
    peer = Peer("memory", "modern", server=server)
    try:
        first = created(peer, "slow", seconds=60)
        error = peer.error("tools/call", {"name": "slow", "arguments": {"seconds": 60}})
        assert error["code"] == -32603 and "too many tasks running (1)" in error["message"]
        assert server.task_store.list("")[0][0].task_id == first  # only the first
        peer.result("tasks/cancel", {"taskId": first})
        wait_until(lambda: server._tasks.runner.running() == 0, timeout=WAIT)
        created(peer, "slow", seconds=0)  # a slot is free again
    finally:
        peer.close()
        assert server.close_tasks(WAIT)


def test_close_tasks_stops_running_tasks_and_joins_them() -> None:
    server = make_server()
    peer = Peer("memory", "modern", server=server)
    try:
        task_id = created(peer, "slow", seconds=60)
        assert server.close_tasks(WAIT)
        assert server._tasks.runner.running() == 0
        record = server.task_store.get(task_id)
        assert record is not None and record.status == "failed"
        assert record.error == {"code": -32603, "message": "the server stopped"}
        # Stopped, not dead: a server may be served again, and its runner takes tasks.
        again = created(peer, "slow", seconds=0)
        wait_until(lambda: status(peer, again) == "completed", timeout=WAIT)
    finally:
        peer.close()
        server.close_tasks(WAIT)


def test_the_wsgi_app_closing_stops_its_running_tasks() -> None:
    """``app.close()`` (what ``run_http`` and ``mcpsync serve`` do on exit) runs
    ``Server.stop()``, which stops the tasks running in this process: they end ``failed``
    at once rather than ``working`` until their records expire."""
    from mcpsync import Client
    from tests.serving import RunningServer

    server = make_server()
    app = server.wsgi_app()
    with RunningServer(app) as running, Client.http(f"{running.base}/mcp") as client:
        handle = client.start_task("slow", {"seconds": 60})
        assert handle.status().status == "working"
        app.close()
        record = server.task_store.get(handle.id)
        assert record is not None and record.status == "failed", record
        assert record.error == {"code": -32603, "message": "the server stopped"}
        assert server._tasks.runner.running() == 0


def test_a_cancel_served_by_another_worker_reaches_the_runner() -> None:
    """Two servers (two "workers") share one store: the task runs on the first, the
    client's tasks/cancel lands on the second; the runner learns it from the store."""
    store = MemoryTaskStore()
    one, two = make_server(task_store=store), make_server(task_store=store)
    first, second = Peer("memory", "modern", server=one), Peer("memory", "modern", server=two)
    try:
        task_id = created(first, "slow", seconds=60)
        assert status(second, task_id) == "working"  # any worker answers tasks/get
        second.result("tasks/cancel", {"taskId": task_id})
        wait_until(lambda: one._tasks.runner.running() == 0, timeout=WAIT,
                   message="the runner did not notice the cancel")
        assert status(first, task_id) == "cancelled"
    finally:
        first.close()
        second.close()
        one.close_tasks()
        two.close_tasks()


def test_ids_are_unguessable_and_distinct() -> None:
    server = make_server()
    peer = Peer("memory", "modern", server=server)
    try:
        ids = {created(peer, "slow", seconds=0) for _ in range(20)}
        assert len(ids) == 20 and all(len(i) == 32 for i in ids)  # 24 random bytes
    finally:
        peer.close()
        server.close_tasks()


def test_a_handler_that_detaches_still_runs_as_a_task() -> None:
    server = make_server()
    peer = Peer("memory", "modern", server=server)
    try:
        task_id = created(peer, "detaching")
        wait_until(lambda: status(peer, task_id) == "completed", timeout=WAIT)
        result = peer.result("tasks/get", {"taskId": task_id})["result"]
        assert result["content"][0]["text"] == "detached from TaskContext"
    finally:
        peer.close()
        server.close_tasks()


def test_ask_all_gives_each_question_its_own_answers() -> None:
    server = make_server()
    peer = Peer("memory", "modern", server=server)

    def pending() -> dict[str, Any]:
        asked: dict[str, Any] = peer.result("tasks/get", {"taskId": task_id}).get(
            "inputRequests", {})
        return asked

    def answer(message: str, name: str) -> None:
        wait_until(lambda: any(q["params"]["message"] == message
                               for q in pending().values()), timeout=WAIT)
        key = next(k for k, q in pending().items() if q["params"]["message"] == message)
        peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
            key: {"action": "accept", "content": {"name": name}}}})

    try:
        task_id = created(peer, "ask_nested")
        answer("A?", "a")
        answer("C?", "c")
        answer("B?", "b")  # asked afresh after the first round
        wait_until(lambda: status(peer, task_id) == "completed", timeout=WAIT)
        result = peer.result("tasks/get", {"taskId": task_id})["result"]
        assert result["content"][0]["text"] == "a+b/c"
    finally:
        peer.close()
        server.close_tasks()


def test_the_task_store_can_be_set_until_tasks_are_served() -> None:
    server = make_server()
    store = MemoryTaskStore()
    server.task_store = store  # what `mcpsync serve --task-store` does
    assert server.task_store is store
    try:
        server.task_store = MemoryTaskStore()
    except RuntimeError as exc:
        assert "before tasks are served" in str(exc)
    else:
        raise AssertionError("replacing the store of a serving server must fail")


def test_request_scopes_wrap_a_task_on_its_own_thread() -> None:
    """A request scope (a thread-bound DB session, say) is entered on the task's thread
    around the tool and exited when it ends, as for a plain call."""
    import threading

    server = make_server()
    seen: list[tuple[str, str, str]] = []
    exited = threading.Event()

    @server.request_scope
    def scope(ctx: Any) -> Any:
        if ctx.method != "tools/call":
            yield
            return
        seen.append(("enter", threading.current_thread().name, type(ctx).__name__))
        try:
            yield
        finally:
            seen.append(("exit", threading.current_thread().name, type(ctx).__name__))
            if threading.current_thread().name.startswith("mcpsync-task-"):
                exited.set()

    peer = Peer("memory", "modern", server=server)
    try:
        task_id = created(peer, "slow", seconds=0)
        assert exited.wait(WAIT), seen
        wait_until(lambda: status(peer, task_id) == "completed", timeout=WAIT)
        on_task = [entry for entry in seen if entry[1].startswith("mcpsync-task-")]
        assert [kind for kind, _, _ in on_task] == ["enter", "exit"], seen
        assert {ctx for _, _, ctx in on_task} == {"TaskContext"}
    finally:
        peer.close()
        server.close_tasks(WAIT)


def test_a_failure_outside_the_tool_never_puts_its_text_on_the_wire() -> None:
    """A request scope that fails (a database that refuses the connection, naming its DSN)
    is an internal error: as a plain call it is answered "Internal error", and as a task it
    must say no more. The runner used to write the exception's type and text into the
    task's ``statusMessage`` and ``error`` for every client to read."""
    import json
    import threading

    server = make_server()
    secret = "postgresql://admin:hunter2@10.0.0.5/prod"
    failed = threading.Event()

    @server.request_scope
    def database(ctx: Any) -> Any:
        if ctx.method == "tools/call" and type(ctx).__name__ == "TaskContext":
            failed.set()
            raise ConnectionError(f"could not connect to {secret}")
        yield

    peer = Peer("memory", "modern", server=server)
    try:
        task_id = created(peer, "slow", seconds=0)
        assert failed.wait(WAIT)
        wait_until(lambda: status(peer, task_id) == "failed", timeout=WAIT)
        seen = json.dumps(peer.result("tasks/get", {"taskId": task_id}))
        record = server.task_store.get(task_id)
        assert record is not None
        stored = json.dumps([record.status_message, record.error])
        for text in (seen, stored):
            assert "hunter2" not in text and "ConnectionError" not in text, text
        assert record.error == {"code": -32603, "message": "Internal error"}
    finally:
        peer.close()
        server.close_tasks(WAIT)


def test_a_result_the_store_cannot_hold_ends_the_task_failed(tmp_path: Any) -> None:
    """SQLite cannot store a lone surrogate (JSON text can carry one). The runner's thread
    used to die on the write and leave the task "working" until its TTL; the task now
    fails, saying its outcome could not be stored (and nothing of the store's error)."""
    from mcpsync.tasks import SqliteTaskStore

    server = make_server(task_store=SqliteTaskStore(str(tmp_path / "tasks.db")))

    @server.tool(task="optional")
    def odd() -> str:
        return "half of a pair: \ud800"

    peer = Peer("memory", "modern", server=server)
    try:
        task_id = created(peer, "odd")
        wait_until(lambda: status(peer, task_id) != "working", timeout=WAIT)
        got = peer.result("tasks/get", {"taskId": task_id})
        assert got["status"] == "failed", got
        assert got["statusMessage"] == "the task's outcome could not be stored"
        assert server._tasks.runner.running() == 0
    finally:
        peer.close()
        server.close_tasks(WAIT)
