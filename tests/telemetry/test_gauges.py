"""The gauges only a thread-based server has: handler threads busy and their cap, requests
waiting for a thread, open sessions, running tasks, read while a tool holds a thread."""

from __future__ import annotations

import threading

import pytest

from mcpsync import Client, HandlerContext, Server, ServerLimits
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer


def value(sdk, name):
    points = sdk.points(name)
    return points[-1].value if points else None


def test_busy_threads_cap_and_sessions_while_a_tool_runs(sdk):
    server = Server("gauged", limits=ServerLimits(max_handlers=4),
                    telemetry=sdk.telemetry)
    release, entered = threading.Event(), threading.Event()

    @server.tool()
    def hold(ctx: HandlerContext) -> str:  # a context: it runs on the app's handler pool
        entered.set()
        release.wait(WAIT)
        return "done"

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version="2025-11-25", telemetry=sdk.telemetry,
            timeout=WAIT) as client:
        caller = threading.Thread(target=client.call_tool, args=("hold",), name="t-caller")
        caller.start()
        try:
            assert entered.wait(WAIT)
            assert value(sdk, "mcpsync.server.handlers.busy") == 1
            assert value(sdk, "mcpsync.server.handlers.limit") == 4  # the app's one pool
            assert value(sdk, "mcpsync.server.requests.queued") == 0
            assert value(sdk, "mcpsync.server.sessions.open") == 1
            assert value(sdk, "mcpsync.server.tasks.running") == 0
            assert value(sdk, "mcpsync.client.handlers.limit") == 16  # the client's own pool
            assert value(sdk, "mcpsync.client.handlers.busy") == 0
        finally:
            release.set()
            caller.join(WAIT)
        wait_until(lambda: value(sdk, "mcpsync.server.handlers.busy") == 0, timeout=WAIT,
                   message="the handler thread never went idle")


def test_running_tasks_are_counted(sdk):
    server = Server("tasks", telemetry=sdk.telemetry)
    release, entered = threading.Event(), threading.Event()

    @server.tool(task="required")
    def long_job() -> str:
        entered.set()
        release.wait(WAIT)
        return "done"

    with Client.memory(server, protocol_version="2025-11-25", telemetry=sdk.telemetry,
                       timeout=WAIT) as client:
        handle = client.start_task("long_job")
        try:
            assert entered.wait(WAIT)
            assert value(sdk, "mcpsync.server.tasks.running") == 1
        finally:
            release.set()
        assert handle.result(timeout=WAIT).text == "done"
        wait_until(lambda: value(sdk, "mcpsync.server.tasks.running") == 0, timeout=WAIT,
                   message="the task was never counted as ended")


def test_a_tasks_run_is_a_span_linked_to_the_request_that_made_it(sdk):
    from opentelemetry.trace import SpanKind

    server = Server("tasks", telemetry=sdk.telemetry)

    @server.tool(task="required")
    def job(ctx: HandlerContext) -> str:
        ctx.info("half way")
        return "done"

    with Client.memory(server, protocol_version="2025-11-25", telemetry=sdk.telemetry,
                       timeout=WAIT) as client:
        handle = client.start_task("job")
        assert handle.result(timeout=WAIT).text == "done"
    spans = sdk.finished()
    (creating,) = [s for s in spans if s.name == "tools/call job" and s.kind is SpanKind.SERVER]
    (run,) = [s for s in spans if s.name == "tools/call job" and s.kind is SpanKind.INTERNAL]
    assert run.attributes["mcpsync.task.id"] == handle.id
    assert [link.context.span_id for link in run.links] == [creating.context.span_id]
    asked = [s for s in spans if s.name in ("tasks/get", "tasks/result")
             and s.kind is SpanKind.SERVER]
    assert asked and all(s.attributes["mcpsync.task.id"] == handle.id for s in asked)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_tasks_progress_and_logs_are_events_of_its_run(sdk, version):
    """The task's own thread has no request span: what its context sends is recorded on
    the task's span (bounded), not lost, and its log messages carry that span's trace."""
    from opentelemetry.trace import SpanKind

    server = Server("tasks", telemetry=sdk.telemetry)
    sent = sdk.telemetry.max_span_events + 8

    @server.tool(task="required")
    def job(ctx: HandlerContext) -> str:
        ctx.progress(1, 2)
        ctx.info("half way")
        for n in range(sent):  # past the bound
            ctx.debug(f"line {n}")
        return "done"

    logs: list = []
    with Client.memory(server, protocol_version=version, telemetry=sdk.telemetry,
                       log_level="debug", on_log=logs.append, timeout=WAIT) as client:
        handle = client.start_task("job", meta={"progressToken": "job-progress"})
        assert handle.result(timeout=WAIT).text == "done"
        if version == "2025-11-25":  # the session carries the task's log messages
            wait_until(lambda: any(m.data == "half way" for m in logs), timeout=WAIT,
                       message="the task's log message never reached on_log")
    spans = sdk.finished()
    (run,) = [s for s in spans if s.name == "tools/call job" and s.kind is SpanKind.INTERNAL]
    names = [e.name for e in run.events]
    assert len(names) == sdk.telemetry.max_span_events
    assert names[:2] == ["mcp.progress", "mcp.log"]
    assert dict(run.events[0].attributes) == {"progress": 1, "total": 2}
    assert run.events[1].attributes["level"] == "info"
    assert set(names[2:]) == {"mcp.log"}
    (creating,) = [s for s in spans if s.name == "tools/call job" and s.kind is SpanKind.SERVER]
    assert not creating.events  # recorded on the run, not on the long-answered request
    for record in (m for m in logs if m.data == "half way"):
        assert (record.meta or {})["traceparent"].split("-")[2] \
            == format(run.context.span_id, "016x")


def test_open_sse_streams_are_counted_while_a_get_stream_is_open(sdk):
    from mcpsync.http.replies import OPEN_STREAMS
    from tests.http.raw import LegacySession

    name = "mcpsync.server.sse_streams.open"
    server = Server("streams", telemetry=sdk.telemetry)
    app = server.wsgi_app(path="/mcp")
    before = OPEN_STREAMS.count()  # the process's count: earlier tests' streams are closed
    with RunningServer(app, on_stop=app.close) as running:
        session = LegacySession(running.base + "/mcp")
        # the initialize answer may have been an SSE body the server is still closing
        wait_until(lambda: value(sdk, name) == before, timeout=WAIT,
                   message=lambda: f"{value(sdk, name)} open before the GET, not {before}")
        stream = session.get()  # returns once the headers came: the body is open
        try:
            assert stream.status_code == 200
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            assert value(sdk, name) == before + 1
        finally:
            stream.close()  # the client leaves: the server notices and closes the body
        wait_until(lambda: value(sdk, name) == before, timeout=WAIT,
                   message="the closed GET stream was still counted")
