"""Tasks cross a mount like every other feature (issue 34: a ``task="required"`` tool
behind a mount was listed, then failed with "must be called as a task" or "missing client
capability" although the client declared tasks). The mounted server runs the task; the
parent lists the tool's ``execution`` and routes ``tasks/*`` of that task to it. Both
eras, in memory and over HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from mcpsync import Client, HandlerContext, Server
from mcpsync.errors import MCPError
from tests.helpers import WAIT
from tests.serving import RunningServer

COMBOS = [(kind, era) for kind in ("memory", "http") for era in ("2026-07-28", "2025-11-25")]


def worker() -> Server:
    child = Server("worker")

    @child.tool(task="required")
    def crunch(ctx: HandlerContext, n: int) -> str:
        """A long job that only runs as a task."""
        ctx.progress(1, total=1)
        return f"crunched {n}"

    @child.tool(task="optional")
    def maybe(text: str) -> str:
        return f"maybe: {text}"

    return child


@contextlib.contextmanager
def connect(kind: str, era: str) -> Iterator[Client]:
    parent = Server("parent")
    parent.add_tool(lambda: "own", name="own")
    parent.mount(worker(), prefix="w")
    try:
        if kind == "memory":
            with Client.memory(parent, protocol_version=era, timeout=WAIT) as client:
                yield client
        else:
            app = parent.wsgi_app(path="/mcp")
            with (RunningServer(app, on_stop=app.close) as running,
                  Client.http(running.base + "/mcp", protocol_version=era,
                              timeout=WAIT) as client):
                yield client
    finally:
        parent.stop()


@pytest.mark.parametrize(("kind", "era"), COMBOS)
def test_a_required_task_tool_behind_a_mount_runs_as_a_task(kind: str, era: str) -> None:
    with connect(kind, era) as client:
        listed = {t["name"]: t for t in client.request("tools/list", {}, cache=False)["tools"]}
        assert listed["w_crunch"].get("execution") == {"taskSupport": "required"}
        assert client.call_tool("w_crunch", {"n": 3}).text == "crunched 3"
        handle = client.start_task("w_maybe", {"text": "y"})
        assert handle.id and handle.result().text == "maybe: y"
        # An id no server holds is unknown on the parent as on any server.
        with pytest.raises(MCPError) as unknown:
            client.request("tasks/get", {"taskId": "no-such-task"}, cache=False)
        assert unknown.value.code == -32602
