"""Server lifespan: ``Server(lifespan=...)``, ``on_startup``/``on_shutdown`` and
``ctx.state``, in memory and over HTTP in both eras (the stdio and gunicorn processes are
in test_lifespan_processes.py)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcpsync import Client, HandlerContext, Server, ServerLimits, StartupError
from tests.helpers import WAIT, run_threads, wait_until
from tests.http.raw import BOTH, LEGACY, MODERN, post_modern
from tests.serving import RunningServer

VERSIONS = [LEGACY, MODERN]


def lifespan_server(events: list[str]) -> Server:
    @contextlib.contextmanager
    def lifespan(server: Server) -> Iterator[dict[str, Any]]:
        events.append("enter")
        try:
            yield {"db": f"pool of {server.name}"}
        finally:
            events.append("exit")

    server = Server("life", lifespan=lifespan, request_state_key="lifespan-tests")

    @server.on_startup
    def up() -> None:
        events.append("up")

    @server.on_shutdown
    def down() -> None:
        events.append("down")

    @server.tool()
    def db(ctx: HandlerContext) -> str:
        return str(ctx.state["db"])

    @server.tool()
    def detached_db(ctx: HandlerContext) -> str:
        return str(ctx.detach().state["db"])

    return server


@pytest.mark.parametrize("version", VERSIONS)
def test_state_reaches_handlers_and_startup_runs_once(version):
    events: list[str] = []
    server = lifespan_server(events)
    try:
        clients = [Client.memory(server, protocol_version=version, timeout=WAIT)
                   for _ in range(3)]
        try:
            answers = run_threads(lambda i: clients[i % 3].call_tool("db").text, 9,
                                  name="t-lifespan", timeout=WAIT)
            assert answers == ["pool of life"] * 9
            assert clients[0].call_tool("detached_db").text == "pool of life"
        finally:
            for client in clients:
                client.close()
        assert events == ["enter", "up"]  # once, however many sessions and threads
        assert server.state == {"db": "pool of life"}
    finally:
        server.stop()
    assert events == ["enter", "up", "down", "exit"]
    server.stop()  # once only
    assert events == ["enter", "up", "down", "exit"]


def test_generator_lifespan_and_hooks_without_lifespan():
    seen: list[str] = []

    def lifespan(server: Server) -> Iterator[str]:
        seen.append("in")
        yield "state"
        seen.append("out")

    server = Server("gen", lifespan=lifespan)
    assert server.start() == "state"
    server.stop()
    assert seen == ["in", "out"]

    plain = Server("plain")

    @plain.on_startup
    def fill() -> None:
        plain.state.counter = 41

    @plain.tool()
    def counter(ctx: HandlerContext) -> int:
        return int(ctx.state.counter) + 1

    with Client.memory(plain, timeout=WAIT) as client:
        assert client.call_tool("counter").text == "42"
    plain.stop()


def test_startup_failure_is_a_clear_error_every_time_until_stop():
    calls: list[str] = []
    server = Server("broken")

    @server.on_startup
    def connect() -> None:
        calls.append("up")
        raise ConnectionError("no database")

    @server.on_shutdown
    def never() -> None:
        calls.append("down")

    for _ in range(2):
        with pytest.raises(StartupError, match="no database") as info:
            Client.memory(server, timeout=WAIT)
        assert isinstance(info.value.__cause__, ConnectionError)
    assert calls == ["up"]  # not retried behind the caller's back
    server.stop()
    assert calls == ["up"]  # a failed startup has nothing to shut down
    with pytest.raises(StartupError):
        server.start()  # stop() reset it: tried again
    assert calls == ["up", "up"]


def test_a_failed_lifespan_undoes_what_it_entered():
    exited: list[str] = []

    @contextlib.contextmanager
    def lifespan(server: Server) -> Iterator[None]:
        try:
            yield
        finally:
            exited.append("exit")

    server = Server("half", lifespan=lifespan)
    server.on_startup(lambda: 1 / 0)
    with pytest.raises(StartupError, match="ZeroDivisionError"):
        server.start()
    assert exited == ["exit"]


def test_threads_arriving_during_startup_wait_for_it():
    release = threading.Event()
    entered = threading.Event()
    server = Server("slow")

    @server.on_startup
    def slow() -> None:
        entered.set()
        assert release.wait(WAIT)
        server.state.ready = True

    first = threading.Thread(target=server.start, name="t-lifespan-first")
    first.start()
    assert entered.wait(WAIT)
    results: list[Any] = []
    second = threading.Thread(target=lambda: results.append(server.start().ready),
                              name="t-lifespan-second")
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the first thread's startup
    release.set()
    first.join(WAIT)
    second.join(WAIT)
    assert results == [True]
    server.stop()


def test_a_startup_slower_than_startup_timeout_is_an_error():
    release = threading.Event()
    entered = threading.Event()
    server = Server("stuck", limits=ServerLimits(startup_timeout=0.1))

    @server.on_startup
    def stuck() -> None:
        entered.set()
        release.wait(WAIT)

    first = threading.Thread(target=server.start, name="t-lifespan-stuck")
    first.start()
    try:
        assert entered.wait(WAIT)
        with pytest.raises(StartupError, match="still running"):
            server.start()
    finally:
        release.set()
        first.join(WAIT)
    server.stop()


@pytest.mark.parametrize("version", VERSIONS)
def test_http_starts_at_the_first_request_and_close_shuts_down(version):
    events: list[str] = []
    server = lifespan_server(events)
    app = server.wsgi_app(path="/mcp")
    assert events == []  # making the app starts nothing (gunicorn --preload forks after)
    with RunningServer(app, on_stop=app.close) as running:
        with Client.http(running.base + "/mcp", protocol_version=version,
                         timeout=WAIT) as client:
            assert client.call_tool("db").text == "pool of life"
            assert client.call_tool("detached_db").text == "pool of life"
        assert events == ["enter", "up"]
    assert events == ["enter", "up", "down", "exit"]


def test_app_start_runs_startup_before_any_request():
    events: list[str] = []
    server = lifespan_server(events)
    app = server.wsgi_app(path="/mcp")
    try:
        assert app.start() == {"db": "pool of life"}
        assert events == ["enter", "up"]
    finally:
        app.close()
    assert events[-2:] == ["down", "exit"]


def test_http_startup_failure_answers_503_json_in_both_eras():
    server = Server("broken-http")
    server.on_startup(lambda: 1 / 0)
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        check_503(running.base + "/mcp")


def check_503(url: str) -> None:
    response = post_modern(url, "tools/list")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == -32603
    # Generic: the exception's text is the operator's (the log has it), not the caller's.
    assert error["message"] == "Service unavailable: the server failed to start"
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    response = requests.post(url, json=body, timeout=WAIT,
                             headers={"Accept": BOTH, "MCP-Protocol-Version": LEGACY})
    assert response.status_code == 503
    assert response.headers["Content-Type"].startswith("application/json")


def test_task_context_has_the_state():
    server = Server("tasks-state", lifespan=lambda s: contextlib.nullcontext("the state"))
    done = threading.Event()
    seen: list[Any] = []

    @server.tool(task="required")
    def job(ctx: HandlerContext) -> str:
        seen.append(ctx.state)
        done.set()
        return "ok"

    with Client.memory(server, timeout=WAIT, protocol_version=LEGACY) as client:
        handle = client.start_task("job")
        assert handle.result(timeout=WAIT).text == "ok"
    wait_until(done.is_set, timeout=WAIT)
    assert seen == ["the state"]
    server.close_tasks()
    server.stop()


def test_started_servers_are_not_kept_alive_by_exit_hooks():
    """A test run or an app that makes many servers must not keep each one until exit:
    only a server with something to shut down is remembered for exit, until its stop()."""
    import gc
    import weakref

    plain = Server("plain")
    with Client.memory(plain, timeout=WAIT) as client:
        client.ping()
    hooked = Server("hooked")
    hooked.on_shutdown(lambda: None)
    hooked.start()
    hooked.stop()
    refs = [weakref.ref(plain), weakref.ref(hooked)]
    del plain, hooked, client
    gc.collect()
    assert [ref() for ref in refs] == [None, None]


def test_shutdown_hooks_read_the_state_without_starting_again():
    starts: list[int] = []

    def lifespan(server: Server) -> Iterator[dict[str, list[str]]]:
        starts.append(1)
        state: dict[str, list[str]] = {"flushed": []}
        yield state

    server = Server("flush", lifespan=lifespan)
    seen: list[Any] = []

    @server.on_shutdown
    def flush() -> None:
        seen.append(server.state)

    server.start()
    server.stop()
    assert seen == [{"flushed": []}] and starts == [1]  # not started again by the hook
