"""A handler that ends by an exception that is not an ``Exception`` (``sys.exit()`` in a
tool, Ctrl-C on a request served on the main thread, a test runner's timeout) still gets
its request answered: -32603 with the generic text and the request id, as any handler
failure (``InboundExecutor.settle``). It was left without an answer: the client waited for
its timeout, an HTTP response stayed open for good, a stdio drain waited for it at EOF,
and Ctrl-C inside a tool run on the request's own thread was swallowed. The exception
then goes on, on its own thread: a pool thread logs it and serves on; the request's own
thread hands it to its caller (the WSGI server: Ctrl-C stops a one-thread server)."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, MCPError, MCPSyncError
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer, free_port, wait_for_port, with_root_on_path

from .escaping_server import server

ROOT = Path(__file__).resolve().parents[2]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERAS = [LEGACY, MODERN]


@contextmanager
def connect(transport: str, version: str) -> Iterator[Client]:
    if transport == "memory":
        with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
            yield client
    elif transport == "stdio":
        with Client.stdio([sys.executable, "-m", "tests.server.escaping_server"], cwd=ROOT,
                          protocol_version=version, timeout=WAIT) as client:
            yield client
    else:
        app = server.wsgi_app(path="/mcp")
        with RunningServer(app, on_stop=app.close) as running, Client.http(
                running.base + "/mcp", protocol_version=version, timeout=WAIT) as client:
            yield client


def _refused(call: Any, method: str) -> None:
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        call()
    assert time.monotonic() - started < WAIT / 2, "answered only by the client's timeout"
    assert caught.value.code == -32603
    assert re.fullmatch(rf"Error in {re.escape(method)}: an internal error occurred "
                        r"\(request .+\)", caught.value.message), caught.value.message


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
def test_sys_exit_in_a_handler_is_answered_and_the_server_serves_on(transport: str,
                                                                    version: str) -> None:
    with connect(transport, version) as client:
        _refused(lambda: client.call_tool("leave"), "tools/call")
        _refused(lambda: client.request("x/leave", {}), "x/leave")
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


@pytest.mark.parametrize("version", ERAS)
def test_ctrl_c_in_a_tool_on_a_one_thread_server_stops_the_server(version: str,
                                                                  tmp_path: Path) -> None:
    # A tool without a context runs on the request's own thread: on a one-thread server,
    # the main thread. Ctrl-C there is the server's, as if no tool had been running (it
    # was swallowed in the 2025-11-25 era, and the request left unanswered for good).
    marker = tmp_path / "running"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.server.escaping_server", "--one-thread-wsgi", str(port)],
        cwd=ROOT, env=with_root_on_path(ESCAPING_MARKER=str(marker)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    caller: threading.Thread | None = None
    try:
        wait_for_port(port, proc=proc)

        def call() -> None:
            with contextlib.suppress(MCPSyncError), Client.http(
                    f"http://127.0.0.1:{port}/mcp", protocol_version=version,
                    timeout=WAIT) as client:
                client.call_tool("held")

        caller = threading.Thread(target=call, name="test-held-call", daemon=True)
        caller.start()
        wait_until(marker.exists, timeout=WAIT, message="the tool never ran")
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            pytest.fail("Ctrl-C during the tool did not stop the one-thread server")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
        if caller is not None:
            caller.join(WAIT)
