"""The client side of tasks against answers a well-behaved server never gives (scripted on a
raw memory transport) and the pure rules (surface choice, poll pacing, routing headers).
The real peers are in ``tests/interop/test_tasks_client.py``."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mcpsync import ElicitResult, HostHandlers, ProtocolStateError, RequestTimeoutError
from mcpsync.client.task_calls import TASKS_EXTENSION, surface_of, with_extension
from mcpsync.client.tasks import (
    MAX_POLL_INTERVAL,
    MIN_POLL_INTERVAL,
    TaskCancelledError,
    TaskState,
    _next_pause,
)
from mcpsync.protocol.http_headers import mismatch, request_headers
from mcpsync.protocol.versions import META_CAPABILITIES
from tests.client.scripted import Scripted

V2_CAPS = {"tools": {}, "extensions": {TASKS_EXTENSION: {}}}
STAMP = "2026-12-03T12:00:00Z"


def _task(task_id: str = "t1", status: str = "working", **more: Any) -> dict[str, Any]:
    return {"taskId": task_id, "status": status, "createdAt": STAMP, "lastUpdatedAt": STAMP,
            "ttlMs": 60000, **more}


class TaskServer:
    """A scripted v2 server: ``tools/call`` creates task ``t1``; ``tasks/get`` answers from
    ``states`` in turn (the last one repeats)."""

    def __init__(self, states: list[dict[str, Any]], *, created: dict[str, Any] | None = None,
                 caps: dict[str, Any] | None = None) -> None:
        self.states = states
        self.created = created if created is not None else {**_task(), "resultType": "task",
                                                             "pollIntervalMs": 10}
        self.gets = 0
        self.scripted = Scripted(self.answer, capabilities=V2_CAPS if caps is None else caps)

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            return self.created
        if method == "tasks/get":
            state = self.states[min(self.gets, len(self.states) - 1)]
            self.gets += 1
            return {"resultType": "complete", **state}
        return {"resultType": "complete"}  # tasks/update, tasks/cancel

    def __enter__(self) -> TaskServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.scripted.close()


def test_the_client_declares_the_extension_in_its_envelope() -> None:
    with TaskServer([]) as server, server.scripted.client() as client:
        discover = server.scripted.sent("server/discover")[0]
        caps = discover["params"]["_meta"][META_CAPABILITIES]
        assert caps["extensions"] == {TASKS_EXTENSION: {}}
        assert client.capabilities() == {}  # what the handlers serve: unchanged


def test_a_task_is_followed_to_its_inline_result() -> None:
    done = _task(status="completed", result={"content": [{"type": "text", "text": "ok"}]})
    with TaskServer([_task(pollIntervalMs=10), done]) as server, \
            server.scripted.client() as client:
        assert client.call_tool("job").text == "ok"
        assert [r["params"]["taskId"] for r in server.scripted.sent("tasks/get")] == ["t1"] * 2


def test_a_malformed_task_is_a_clear_error_not_a_hang() -> None:
    with TaskServer([], created={"resultType": "task", "status": "working"}) as server, \
            server.scripted.client() as client, \
            pytest.raises(ProtocolStateError, match="malformed task"):
        client.call_tool("job")


def test_a_task_from_a_server_that_did_not_advertise_the_extension_is_still_followed() -> None:
    done = _task(status="completed", result={"content": [{"type": "text", "text": "ok"}]})
    with TaskServer([done], caps={"tools": {}}) as server, server.scripted.client() as client:
        assert client.task_surface is None
        assert client.call_tool("job").text == "ok"


def test_a_zero_poll_interval_does_not_spin_and_the_timeout_cancels() -> None:
    with TaskServer([_task(pollIntervalMs=0)]) as server, server.scripted.client() as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            client.call_tool("job", timeout=0.5)
        elapsed = time.monotonic() - started
        assert server.gets <= elapsed / MIN_POLL_INTERVAL + 2  # floored, not a busy loop
        assert [r["params"]["taskId"] for r in server.scripted.sent("tasks/cancel")] == ["t1"]


def test_a_huge_poll_interval_does_not_outlive_the_timeout() -> None:
    with TaskServer([_task(pollIntervalMs=10**9)], created={
            **_task(pollIntervalMs=10**9), "resultType": "task"}) as server, \
            server.scripted.client() as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            client.call_tool("job", timeout=0.3)
        assert time.monotonic() - started < 5.0
        assert len(server.scripted.sent("tasks/cancel")) == 1


def test_a_question_without_a_handler_fails_the_call_and_cancels_the_task() -> None:
    asking = _task(status="input_required", inputRequests={
        "q": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {
            "type": "object", "properties": {}}}}})
    with TaskServer([asking]) as server, server.scripted.client() as client:
        with pytest.raises(ProtocolStateError, match="can not give"):
            client.call_tool("job")
        assert len(server.scripted.sent("tasks/cancel")) == 1
        assert server.scripted.sent("tasks/update") == []


def test_a_question_seen_twice_is_answered_once() -> None:
    asking = _task(status="input_required", pollIntervalMs=10, inputRequests={
        "q": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {
            "type": "object", "properties": {}}}}})
    done = _task(status="completed", result={"content": [{"type": "text", "text": "ok"}]})
    asked: list[Any] = []

    def answer(params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={})

    # The server still shows the question after our tasks/update (it had not caught up).
    with TaskServer([asking, asking, asking, done]) as server, \
            server.scripted.client(host=HostHandlers(elicitation=answer)) as client:
        assert client.call_tool("job").text == "ok"
        assert len(asked) == 1
        updates = server.scripted.sent("tasks/update")
        assert [u["params"]["inputResponses"] for u in updates] == [
            {"q": {"action": "accept", "content": {}}}]


def test_questions_answered_by_hand_are_not_asked_again() -> None:
    asking = _task(status="input_required", pollIntervalMs=10, inputRequests={
        "q": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {
            "type": "object", "properties": {}}}}})
    done = _task(status="completed", result={"content": [{"type": "text", "text": "ok"}]})
    with TaskServer([asking, done]) as server, server.scripted.client() as client:
        handle = client.start_task("job")
        state = handle.status()
        assert state.status == "input_required" and list(state.input_requests or {}) == ["q"]
        handle.respond({"q": ElicitResult(action="decline")})
        assert handle.result().text == "ok"  # no handler: it must not be asked
        assert [u["params"]["inputResponses"] for u in server.scripted.sent("tasks/update")] \
            == [{"q": {"action": "decline"}}]


def test_a_cancelled_task_raises_task_cancelled() -> None:
    with TaskServer([_task(status="cancelled", statusMessage="stopped")]) as server, \
            server.scripted.client() as client, \
            pytest.raises(TaskCancelledError, match="stopped"):
        client.call_tool("job")


def test_handles_are_thread_safe() -> None:
    done = _task(status="completed", result={"content": [{"type": "text", "text": "ok"}]})
    with TaskServer([_task(pollIntervalMs=10), _task(pollIntervalMs=10), done]) as server, \
            server.scripted.client() as client:
        handle = client.start_task("job")
        results: list[str] = []
        threads = [threading.Thread(target=lambda: results.append(handle.result().text),
                                    name=f"t-result-{i}") for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert results == ["ok"] * 4


def test_start_task_without_tasks_on_the_server() -> None:
    plain = {"resultType": "complete", "content": [{"type": "text", "text": "x"}]}
    with TaskServer([], created=plain, caps={"tools": {}}) as server, \
            server.scripted.client() as client:
        with pytest.raises(ProtocolStateError, match="offers no tasks"):
            client.start_task("echo", {"text": "x"})
        with pytest.raises(ProtocolStateError):
            client.task("anything")
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        assert server.scripted.sent("tasks/get") == []


def test_start_task_answered_at_once_has_no_id() -> None:
    plain = {"resultType": "complete", "content": [{"type": "text", "text": "now"}]}
    with TaskServer([], created=plain) as server, server.scripted.client() as client:
        handle = client.start_task("quick")
        assert handle.id is None and handle.status().status == "completed"
        assert handle.result().text == "now"
        handle.cancel()  # nothing to cancel
        assert server.scripted.sent("tasks/cancel") == []


# -- pure rules ---------------------------------------------------------------------------


def test_surface_choice() -> None:
    assert surface_of(V2_CAPS, True) == "v2"
    assert surface_of(V2_CAPS, False) == "v2"
    v1 = {"tasks": {"requests": {"tools": {"call": {}}}}}
    assert surface_of(v1, False) == "v1"
    assert surface_of(v1, True) is None  # 2026-07-28 has no v1 surface
    assert surface_of({"tasks": {"list": {}}}, False) is None  # no task-augmented tools/call
    assert surface_of({"extensions": {TASKS_EXTENSION: True}}, True) is None  # malformed


def test_with_extension_keeps_other_extensions() -> None:
    caps = with_extension({"extensions": {"x/y": {"a": 1}}, "roots": {}})
    assert caps == {"extensions": {"x/y": {"a": 1}, TASKS_EXTENSION: {}}, "roots": {}}


def _pauses(hint_ms: int | None, count: int = 12) -> list[float]:
    pauses, backoff = [], 0.05
    for _ in range(count):
        pause, backoff = _next_pause(hint_ms, backoff)
        pauses.append(pause)
    return pauses


def test_poll_pacing() -> None:
    # Quick first looks, doubling up to the server's hint, then the hint.
    assert _pauses(500)[:6] == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]
    assert _pauses(500)[-1] == 0.5
    assert set(_pauses(0)) == {MIN_POLL_INTERVAL}  # a zero hint does not spin
    assert _pauses(10**12)[-1] == MAX_POLL_INTERVAL  # nor does a huge one sleep for days
    no_hint = _pauses(None)
    assert no_hint[0] == 0.05 and no_hint[-1] == 2.0 and no_hint == sorted(no_hint)


def test_task_state_reads_both_surfaces() -> None:
    v1 = TaskState.from_wire({"taskId": "a", "status": "working", "ttl": 5, "pollInterval": 7,
                              "createdAt": STAMP, "lastUpdatedAt": STAMP}, "v1")
    v2 = TaskState.from_wire(_task("b", ttlMs=None, pollIntervalMs=9), "v2")
    assert (v1.ttl_ms, v1.poll_interval_ms, v1.terminal) == (5, 7, False)
    assert (v2.ttl_ms, v2.poll_interval_ms) == (None, 9)
    with pytest.raises(ProtocolStateError):
        TaskState.from_wire({"taskId": 3, "status": "working"}, "v2")


def test_tasks_methods_carry_the_task_id_in_mcp_name() -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"taskId": "abc"}}
        headers = request_headers(message, "2026-07-28")
        assert headers["Mcp-Name"] == "abc"
        lower = {k.lower(): v for k, v in headers.items()}
        assert mismatch(lower, message) is None
        assert mismatch({**lower, "mcp-name": "other"}, message) is not None
