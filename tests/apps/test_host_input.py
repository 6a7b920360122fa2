"""The host's answers to bad input, from a view and at the preview's endpoints (real
sockets): a JSON-RPC error or a 4xx, never a hang, a 500 or a traceback."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcpsync import Client, HostHandlers, Server
from mcpsync.apps import Apps
from mcpsync.apps.host import Bridge, fetch_view
from mcpsync.apps.host.page import MAX_BODY
from mcpsync.apps.host.preview import PreviewServers, preview_of
from mcpsync.apps.wire import host_capabilities
from tests.apps import weather
from tests.apps.views import meta_server
from tests.helpers import WAIT

URI = "ui://weather/dashboard"


@pytest.fixture()
def client() -> Iterator[Client]:
    with Client.memory(weather.build(), timeout=20,
                       host=HostHandlers(extra_capabilities=host_capabilities())) as c:
        yield c


@pytest.fixture()
def bridge(client: Client) -> Bridge:
    tool = next(t for t in client.list_tools() if t.name == "forecast")
    return Bridge(client, tool, {"city": "Oslo"}, fetch_view(client, URI))


@pytest.mark.parametrize("junk", [None, 3, "x", [], {"id": 1, "method": "ping"},
                                  {"jsonrpc": "1.0", "id": 1, "method": "ping"},
                                  {"jsonrpc": "2.0", "id": 1, "result": {}}])
def test_junk_from_a_view_is_ignored(bridge: Bridge, junk: Any) -> None:
    assert bridge.handle(junk) == []


@pytest.mark.parametrize(("message", "code", "said"), [
    ({"method": "sampling/createMessage", "params": {}}, -32601, "not available to a view"),
    ({"method": "tools/call", "params": {"arguments": {}}}, -32602, "needs a name"),
    ({"method": "tools/call", "params": {"name": "refresh", "arguments": []}}, -32602,
     "needs a name"),
    ({"method": "tools/call", "params": {"name": "nope"}}, -32602, "not available"),
    ({"method": "resources/read", "params": {}}, -32602, "needs a uri"),
    ({"method": "resources/read", "params": {"uri": "ui://weather/none"}}, -32002, ""),
    ({"method": "ui/open-link", "params": {"url": "https://x.example"}}, -32000, "opens no"),
    ({"method": "ui/update-model-context", "params": {"content": ["x" * 70_000]}}, -32602,
     "at most"),
])
def test_a_bad_request_from_a_view_is_a_json_rpc_error(bridge: Bridge, message: dict[str, Any],
                                                        code: int, said: str) -> None:
    [answer] = bridge.handle({"jsonrpc": "2.0", "id": "v1", **message})
    assert answer["id"] == "v1"
    assert answer["error"]["code"] == code, answer
    assert said in answer["error"]["message"]


def test_the_tool_runs_once_however_often_its_result_is_asked(client: Client) -> None:
    server = Server("count")
    apps = server.use(Apps())
    apps.view("ui://count/v", "<p></p>")
    calls: list[int] = []

    @server.tool(ui="ui://count/v")
    def count() -> str:
        calls.append(1)
        return str(len(calls))

    with Client.memory(server, host=HostHandlers(extra_capabilities=host_capabilities())) as c:
        [tool] = c.list_tools()
        bridge = Bridge(c, tool, {}, fetch_view(c, "ui://count/v"))
        first, again = bridge.tool_result(), bridge.tool_result()
    assert first == again and calls == [1]


@pytest.fixture()
def preview() -> Iterator[PreviewServers]:
    with Client.memory(meta_server("<p>view</p>"), timeout=20,
                       host=HostHandlers(extra_capabilities=host_capabilities())) as c, \
            PreviewServers(preview_of(c, "show", {"city": "Oslo"}, timeout=20)) as servers:
        yield servers


def _token(preview: PreviewServers) -> str:
    page = requests.get(preview.url, timeout=20)
    assert page.status_code == 200
    found = re.search(r'"base": "/s/([\w-]+)"', page.text)
    assert found is not None
    return found.group(1)


def test_the_preview_endpoints_refuse_bad_requests(preview: PreviewServers) -> None:
    token = _token(preview)
    base = preview.url.rstrip("/")
    post = requests.post
    assert post(f"{base}/s/{token}/message", data=b"{", timeout=20).status_code == 400
    assert post(f"{base}/s/nope/message", data=b"{}", timeout=20).status_code == 404
    assert post(f"{base}/s/{token}/other", data=b"{}", timeout=20).status_code == 404
    evil = post(f"{base}/s/{token}/message", data=b"{}", timeout=20,
                headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403
    big = post(f"{base}/s/{token}/message", data=b" " * (MAX_BODY + 1), timeout=20)
    assert big.status_code in (400, 413)
    ping = post(f"{base}/s/{token}/message", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                timeout=20)
    assert ping.json() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    sandbox = preview.preview.sandbox_origin
    assert requests.get(f"{sandbox}/proxy/nope", timeout=20).status_code == 404
    proxy = requests.get(f"{sandbox}/proxy/{token}", timeout=20)
    assert proxy.headers["Content-Security-Policy"].startswith("default-src 'none'")
    closed = post(f"{base}/s/{token}/close", json={}, timeout=20)
    assert closed.json() == []
    assert post(f"{base}/s/{token}/message", json={}, timeout=20).status_code == 404


def test_a_view_whose_csp_is_not_origins_is_not_shown() -> None:
    server = meta_server("<p>view</p>", csp={"resourceDomains": ["*"]})
    with Client.memory(server, timeout=20,
                       host=HostHandlers(extra_capabilities=host_capabilities())) as c, \
            PreviewServers(preview_of(c, "show", {"city": "Oslo"}, timeout=20)) as servers:
        page = requests.get(servers.url, timeout=20)
    assert page.status_code == 502
    assert "cannot show the view: _meta.ui.csp.resourceDomains: '*' is not an origin" in page.text


def test_a_tool_of_a_preview_that_has_no_view_is_a_502() -> None:
    with Client.memory(meta_server("<p>view</p>"), timeout=20) as c, \
            PreviewServers(preview_of(c, "secret", {}, timeout=20)) as servers:
        page = requests.get(servers.url, timeout=20)
    assert page.status_code == 502 and "has no view" in page.text


def test_a_preview_on_every_interface_is_opened_at_loopback() -> None:
    """Browsers do not open 0.0.0.0: the page and its sandbox are named 127.0.0.1, and
    the page's posts (whose Origin is that) are accepted."""
    with Client.memory(meta_server("<p>view</p>"), timeout=20,
                       host=HostHandlers(extra_capabilities=host_capabilities())) as c, \
            PreviewServers(preview_of(c, "show", {"city": "Oslo"}, timeout=20),
                           "0.0.0.0", 0) as servers:
        assert servers.url.startswith("http://127.0.0.1:")
        assert servers.preview.sandbox_origin.startswith("http://127.0.0.1:")
        token = _token(servers)
        origin = servers.url.rstrip("/")
        ping = requests.post(f"{origin}/s/{token}/message", headers={"Origin": origin},
                             json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=20)
        assert ping.json() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


def test_a_call_given_up_on_is_told_to_the_view_as_cancelled() -> None:
    server = Server("slow")
    apps = server.use(Apps())
    apps.view("ui://slow/v", "<p></p>")
    release = threading.Event()

    @server.tool(ui="ui://slow/v")
    def slow() -> str:
        release.wait(WAIT)
        return "late"

    try:
        with Client.memory(server, host=HostHandlers(
                extra_capabilities=host_capabilities())) as c:
            [tool] = c.list_tools()
            bridge = Bridge(c, tool, {}, fetch_view(c, "ui://slow/v"), timeout=0.3)
            told = bridge.tool_result()
    finally:
        release.set()
    assert told["method"] == "ui/notifications/tool-cancelled"
    assert "timed out" in told["params"]["reason"]
