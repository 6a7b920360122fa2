"""mcpsync's own Client over HTTP, against the fixture server and small servers."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
import requests

from mcpsync import (
    Client,
    CreateMessageResult,
    ElicitResult,
    HandlerContext,
    HostHandlers,
    ProtocolOptions,
    RequestTimeoutError,
    Server,
    TextContent,
)
from mcpsync.protocol.versions import MODERN_VERSIONS
from tests.serving import RunningServer

from .raw import WAIT

VERSIONS = ["2026-07-28", "2025-11-25", "auto"]
EXPECTED = {"2026-07-28": "2026-07-28", "2025-11-25": "2025-11-25", "auto": "2026-07-28"}


@pytest.mark.parametrize("version", VERSIONS)
def test_list_call_and_progress(url, version):
    with Client.http(url, protocol_version=version, timeout=WAIT) as client:
        assert client.protocol_version == EXPECTED[version]
        names = {tool.name for tool in client.list_tools()}
        assert {"echo", "add", "progress", "slow"} <= names
        assert client.call_tool("echo", {"text": "héllo 世界"}).text == "héllo 世界"
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        assert client.call_tool("fail").is_error
        seen = []
        assert client.call_tool("progress", {"steps": 4}, on_progress=seen.append).text == "ok"
        assert [p.progress for p in seen] == [1, 2, 3, 4]
        assert [p.message for p in seen] == [f"step {i}" for i in range(1, 5)]


def cancellable_server() -> tuple[Server, threading.Event, threading.Event]:
    srv = Server("cancellable", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    started, cancelled = threading.Event(), threading.Event()

    @srv.tool()
    def hang(ctx: HandlerContext) -> str:
        ctx.cancelled.add_callback(cancelled.set)  # type: ignore[attr-defined]
        started.set()
        ctx.sleep(WAIT)
        return "finished"

    @srv.tool()
    def quick() -> str:
        return "quick"

    return srv, started, cancelled


@pytest.mark.parametrize("version", VERSIONS)
def test_timeout_cancels_on_the_server(serve, version):
    srv, started, cancelled = cancellable_server()
    url = serve(srv, keepalive_interval=0.05).url
    with Client.http(url, protocol_version=version, timeout=WAIT) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("hang", timeout=0.5)
        assert started.is_set()
        assert cancelled.wait(WAIT), "the server-side handler never saw the cancellation"
        assert client.call_tool("quick").text == "quick"  # the client still works


def asking_server() -> Server:
    srv = Server("asking", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                 request_state_key="k" * 32)

    @srv.tool()
    def ask_name(ctx: HandlerContext) -> str:
        answer = ctx.elicit("Name?", {"type": "object",
                                      "properties": {"name": {"type": "string"}}})
        return f"{answer.action}:{(answer.content or {}).get('name')}"

    @srv.tool()
    def ask_model(ctx: HandlerContext) -> str:
        reply = ctx.sample("Say hi", max_tokens=10)
        content = reply.content
        return f"{reply.model}:{getattr(content, 'text', content)}"

    return srv


@pytest.mark.parametrize("version", VERSIONS)
def test_elicitation_and_sampling_by_host_handlers(serve, version):
    url = serve(asking_server()).url
    asked: list[str] = []

    def elicit(params):
        asked.append(params.message)
        return ElicitResult("accept", {"name": "Ada"})

    def sample(params):
        return CreateMessageResult("assistant", TextContent("hi there"), model="m1")

    with Client.http(url, protocol_version=version, timeout=WAIT,
                     host=HostHandlers(elicitation=elicit, sampling=sample)) as client:
        assert client.call_tool("ask_name").text == "accept:Ada"
        assert asked == ["Name?"]
        assert client.call_tool("ask_model").text == "m1:hi there"


class CountingAdapter(requests.adapters.HTTPAdapter):
    """A real adapter that counts what goes through it."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self._lock = threading.Lock()

    def send(self, request, **kwargs):  # type: ignore[override]
        with self._lock:
            self.sent += 1
        return super().send(request, **kwargs)


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_callers_session_is_used_and_not_mutated(url, version):
    http = requests.Session()
    adapter = CountingAdapter()
    http.mount("http://127.0.0.1", adapter)
    http.headers["X-Caller"] = "mine"
    before_headers = dict(http.headers)
    before_adapters = dict(http.adapters)
    before_cookies = http.cookies.get_dict()
    before_auth, before_params = http.auth, dict(http.params)
    with Client.http(url, session=http, protocol_version=version, timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert adapter.sent >= 2
    assert dict(http.headers) == before_headers
    assert dict(http.adapters) == before_adapters
    assert http.cookies.get_dict() == before_cookies
    assert http.auth == before_auth and dict(http.params) == before_params
    # Still usable by its owner: the client did not close it.
    assert http.post(url, data=b"{", headers={"Content-Type": "application/json"},
                     timeout=WAIT).status_code == 400
    http.close()


def test_extra_headers_are_sent(serve):
    srv = Server("hdr", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
    seen: list[str | None] = []

    @srv.tool()
    def whoami(ctx: HandlerContext) -> str:
        return "ok"

    served = serve(srv)
    app = served.app

    def spy(environ, start_response):
        seen.append(environ.get("HTTP_X_TENANT"))
        return app(environ, start_response)

    with RunningServer(spy) as running, Client.http(
            running.base + "/mcp", headers={"X-Tenant": "t1"}, timeout=WAIT) as client:
        assert client.call_tool("whoami").text == "ok"
    assert seen and all(value == "t1" for value in seen)


def test_expired_session_is_reinitialized(served):
    with Client.http(served.url, protocol_version="2025-11-25", timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "one"}).text == "one"
        assert len(served.app.sessions) == 1
        served.app.sessions.close_all()  # the server forgets the session (as on expiry)
        assert len(served.app.sessions) == 0
        assert client.call_tool("echo", {"text": "two"}).text == "two"
        assert len(served.app.sessions) == 1
        assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}


def test_list_changed_reaches_the_client(serve):
    srv = Server("changing")
    changed = threading.Event()

    @srv.tool()
    def first() -> str:
        return "1"

    url = serve(srv).url
    with Client.http(url, protocol_version="2025-11-25", timeout=WAIT,
                     on_notification=lambda method, params: (
                         changed.set() if method == "notifications/tools/list_changed"
                         else None)) as client:
        assert [t.name for t in client.list_tools()] == ["first"]
        # The GET stream is open by the time connect returns; the change comes on it.
        srv.tool(name="second")(lambda: "2")
        assert changed.wait(WAIT)
        assert [t.name for t in client.list_tools()] == ["first", "second"]


def spied(app: Any) -> tuple[Any, list[str]]:
    """Wrap a WSGI app so that every request's method (and JSON-RPC method) is logged."""
    log: list[str] = []

    def spy(environ: dict[str, Any], start_response: Any) -> Any:
        entry = environ["REQUEST_METHOD"]
        if entry == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(size)
            environ["wsgi.input"] = io.BytesIO(body)
            entry += " " + str(json.loads(body).get("method", "response"))
        log.append(entry)
        return app(environ, start_response)

    return spy, log


def test_connect_returns_after_initialized_and_the_get_stream(serve):
    # A server may send requests that belong to no POST on the standalone stream, and the
    # official SDK's server drops them when that stream is not open yet: by the time
    # connect returns, the server has the initialized notification and the GET stream.
    spy, log = spied(serve().app)
    with RunningServer(spy) as running, Client.http(
            running.base + "/mcp", protocol_version="2025-11-25", timeout=WAIT) as client:
        assert log == ["POST initialize", "POST notifications/initialized", "GET"]
        assert client.call_tool("echo", {"text": "x"}).text == "x"


def test_get_stream_comes_back_after_reinitializing(serve):
    srv = Server("changing-again")
    changed = threading.Event()

    @srv.tool()
    def first() -> str:
        return "1"

    served = serve(srv)
    with Client.http(served.url, protocol_version="2025-11-25", timeout=WAIT,
                     on_notification=lambda method, params: (
                         changed.set() if method == "notifications/tools/list_changed"
                         else None)) as client:
        served.app.sessions.close_all()  # expiry: the GET stream ends with a 404
        assert client.call_tool("first").text == "1"  # re-initializes
        srv.tool(name="second")(lambda: "2")
        assert changed.wait(WAIT)  # reached the client over the new session's GET stream
