"""A proxied tool that its remote runs as a task (issue 34: through a proxy, a
``task="required"`` tool answered an empty result, the remote's task dropped on the way):
the proxy follows the remote's task to its end, and its caller gets the tool's result, as
a plain call. Both eras on both sides of the proxy, and through a mount of the proxy."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from mcpsync import Client, HandlerContext, Server
from tests.helpers import WAIT
from tests.serving import RunningServer

ERAS = ("2026-07-28", "2025-11-25")


def remote() -> Server:
    server = Server("remote")

    @server.tool(task="required")
    def crunch(ctx: HandlerContext, n: int) -> str:
        """Only runs as a task."""
        ctx.progress(1, total=1)
        return f"crunched {n}"

    @server.tool(task="optional")
    def maybe(text: str) -> str:
        return f"maybe: {text}"

    return server


@contextlib.contextmanager
def front(kind: str, inner: str, outer: str, mounted: bool) -> Iterator[tuple[Client, str]]:
    proxy = Server.proxy(remote(), name="proxy", protocol_version=inner, timeout=WAIT)
    served, prefix = proxy, ""
    if mounted:
        served = Server("parent")
        served.mount(proxy, prefix="far")
        prefix = "far_"
    try:
        if kind == "memory":
            with Client.memory(served, protocol_version=outer, timeout=WAIT) as client:
                yield client, prefix
        else:
            app = served.wsgi_app(path="/mcp")
            with (RunningServer(app, on_stop=app.close) as running,
                  Client.http(running.base + "/mcp", protocol_version=outer,
                              timeout=WAIT) as client):
                yield client, prefix
    finally:
        served.stop()


@pytest.mark.parametrize("mounted", [False, True], ids=["proxy", "mounted-proxy"])
@pytest.mark.parametrize("outer", ERAS)
@pytest.mark.parametrize("inner", ERAS)
def test_a_remote_task_is_followed_by_the_proxy(inner: str, outer: str,
                                                mounted: bool) -> None:
    with front("memory", inner, outer, mounted) as (client, prefix):
        listed = {t["name"]: t for t in client.request("tools/list", {}, cache=False)["tools"]}
        # The proxy runs them as plain calls for its callers: it does not list task support.
        assert "execution" not in listed[f"{prefix}crunch"]
        assert client.call_tool(f"{prefix}crunch", {"n": 3}).text == "crunched 3"
        raw = client.request("tools/call", {"name": f"{prefix}maybe",
                                            "arguments": {"text": "x"}})
        assert raw.get("resultType", "complete") == "complete"
        assert raw["content"] == [{"type": "text", "text": "maybe: x"}]


@pytest.mark.parametrize("outer", ERAS)
def test_over_http(outer: str) -> None:
    with front("http", "2026-07-28", outer, False) as (client, _):
        assert client.call_tool("crunch", {"n": 4}).text == "crunched 4"
