"""``Client.from_config`` in a real notebook kernel (ipykernel, driven by jupyter_client
as a notebook front end drives it): three servers (stdio, HTTP, one that fails to start);
what each cell shows is the notebook display (HTML and Markdown), and closing the hub
ends every server."""

from __future__ import annotations

import os
import queue
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import require_module
from tests.serving import ROOT

jupyter_client = require_module("jupyter_client")
require_module("ipykernel")

SETUP = """
import sys
from mcpsync import Client
from tests.hub.servers import build_notes
from tests.serving import RunningServer

app = build_notes().wsgi_app(path="/mcp")
running = RunningServer(app, on_stop=app.close)
config = {"mcpServers": {
    "calc": {"command": sys.executable, "args": ["-m", "tests.hub.servers", "calc"]},
    "notes": {"type": "http", "url": running.base + "/mcp"},
    "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
}}
hub = Client.from_config(config, timeout=30)
"""


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    manager = jupyter_client.KernelManager(kernel_name="python3")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    manager.start_kernel(cwd=str(ROOT), env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)


def run(kernel: Any, code: str) -> list[dict[str, Any]]:
    """Execute a cell; the outputs it produced (execute_result, display_data, stream,
    error), each as its content. Bounded: 120 s for the cell."""
    outputs: list[dict[str, Any]] = []

    def collect(message: dict[str, Any]) -> None:
        if message["msg_type"] in ("execute_result", "display_data", "stream", "error"):
            outputs.append({"type": message["msg_type"], **message["content"]})

    try:
        reply = kernel.execute_interactive(code, timeout=120, output_hook=collect)
    except queue.Empty:
        raise AssertionError(f"the cell did not finish in 120 s: {code}") from None
    errors = [o for o in outputs if o["type"] == "error"]
    assert reply["content"]["status"] == "ok", errors or reply["content"]
    return outputs


def result(outputs: list[dict[str, Any]]) -> dict[str, str]:
    found = [o["data"] for o in outputs if o["type"] == "execute_result"]
    assert found, outputs
    return found[-1]


def test_a_hub_in_a_notebook_kernel(kernel: Any) -> None:
    run(kernel, SETUP)
    shown = result(run(kernel, "hub"))
    assert "<b>calc</b>" in shown["text/html"] and "<b>notes</b>" in shown["text/html"]
    assert "failed: " in shown["text/html"] and "status 3" in shown["text/html"]
    assert shown["text/markdown"].startswith("| server | state | command or URL |")
    assert shown["text/plain"].startswith("<Hub 2 of 3 servers: calc (connected, ")
    tools = result(run(kernel, "hub.list_tools()"))["text/html"]
    assert "<b>calc_add</b>" in tools and "<b>notes_add</b>" in tools
    called = result(run(kernel, 'hub.call_tool("calc_add", {"a": 2, "b": 3})'))
    assert called["text/html"].startswith('<div><pre style="white-space:pre-wrap;margin:0">5'
                                          '</pre>')
    noted = result(run(kernel, 'hub.call_tool("notes_add", {"text": "milk"}).text'))
    assert noted["text/plain"] == "'noted: milk'"
    closed = result(run(kernel, "hub.close(); running.stop(); "
                                "(hub.closed, [c.closed for c in hub.clients.values()])"))
    assert closed["text/plain"] == "(True, [True, True])"
