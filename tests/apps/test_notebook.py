"""A tool's view in a real notebook kernel (ipykernel, driven by jupyter_client as a
notebook front end drives it): ``call_tool`` shows an anywidget whose model carries the
view (under its CSP); the test then plays the browser side of the widget, posting the
view's messages on the comm as the widget's JavaScript does, and reads the kernel's
answers: the ``ui/initialize`` result, then the tool input and result, and a view's
call of an app-only tool.

(The widget's JavaScript itself, in a notebook page, is not driven here: the same
protocol runs in Chromium in test_preview_browser.py.)"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import WAIT, require_module
from tests.serving import ROOT

jupyter_client = require_module("jupyter_client")
require_module("ipykernel")
require_module("anywidget")

SETUP = """
from mcpsync import Client, HostHandlers
from mcpsync.apps import host_capabilities
from mcpsync.apps.notebook import call_tool
from tests.apps import weather

client = Client.memory(weather.build(), timeout=30,
                       host=HostHandlers(extra_capabilities=host_capabilities()))
"""


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)


def run(kernel: Any, code: str) -> list[dict[str, Any]]:
    """Execute a cell; every iopub message it produced (bounded: 120 s)."""
    seen: list[dict[str, Any]] = []
    try:
        reply = kernel.execute_interactive(code, timeout=120, output_hook=seen.append)
    except queue.Empty:
        raise AssertionError(f"the cell did not finish in 120 s: {code}") from None
    assert reply["content"]["status"] == "ok", [m["content"] for m in seen]
    return seen


def post(kernel: Any, comm_id: str, message: dict[str, Any]) -> None:
    """What the widget's JavaScript does with a message the view posted."""
    msg = kernel.session.msg("comm_msg", {"comm_id": comm_id, "data": {
        "method": "custom", "content": {"message": message}}})
    kernel.shell_channel.send(msg)


def answers(kernel: Any, comm_id: str, count: int) -> list[dict[str, Any]]:
    """The next ``count`` messages the kernel sends the view on the widget's comm."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    while len(found) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"the kernel sent {found} of {count} messages"
        try:
            msg = kernel.get_iopub_msg(timeout=left)
        except queue.Empty:
            continue
        content = msg["content"]
        if msg["msg_type"] == "comm_msg" and content.get("comm_id") == comm_id:
            data = content["data"]
            if data.get("method") == "custom" and "message" in data["content"]:
                found.append(data["content"]["message"])
    return found


def test_a_tools_view_in_a_kernel(kernel: Any) -> None:
    run(kernel, SETUP)
    seen = run(kernel, 'call_tool(client, "forecast", {"city": "Oslo"})')
    shown = [m["content"]["data"] for m in seen if m["msg_type"] == "execute_result"]
    assert shown and "application/vnd.jupyter.widget-view+json" in shown[0]
    comm_id = shown[0]["application/vnd.jupyter.widget-view+json"]["model_id"]
    [opened] = [m["content"] for m in seen if m["msg_type"] == "comm_open"
                and m["content"]["comm_id"] == comm_id]
    state = opened["data"]["state"]
    assert state["tool"] == "forecast"
    assert state["html"].startswith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy"')
    assert "connect-src https://api.example.com;" in state["csp"]
    assert state["allow"] == "geolocation" and state["prefers_border"] is True
    assert "iframe" in state["_esm"] and 'setAttribute("sandbox", "allow-scripts")' in state[
        "_esm"]

    post(kernel, comm_id, {"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
        "appCapabilities": {}, "appInfo": {"name": "t", "version": "1"},
        "protocolVersion": "2026-01-26"}})
    [initialized] = answers(kernel, comm_id, 1)
    assert initialized["id"] == 1 and initialized["result"]["hostInfo"]["name"] == "mcpsync"
    post(kernel, comm_id, {"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    tool_input, tool_result = answers(kernel, comm_id, 2)
    assert tool_input == {"jsonrpc": "2.0", "method": "ui/notifications/tool-input",
                          "params": {"arguments": {"city": "Oslo"}}}
    assert tool_result["method"] == "ui/notifications/tool-result"
    assert tool_result["params"]["content"] == [
        {"type": "text", "text": "Oslo: sunny, 21 C (the dashboard shows it)"}]
    post(kernel, comm_id, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "refresh", "arguments": {"city": "Oslo"}}})
    [refreshed] = answers(kernel, comm_id, 1)
    assert refreshed["result"]["content"] == [{"type": "text", "text": "Oslo: refreshed"}]
    closed = run(kernel, "client.close(); client.closed")
    assert [m["content"]["data"]["text/plain"] for m in closed
            if m["msg_type"] == "execute_result"] == ["True"]
