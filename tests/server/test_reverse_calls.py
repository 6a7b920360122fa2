"""Blocking handlers asking the client: elicitation, sampling, roots — and their cancellation."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from mcpsync import (
    Client,
    CreateMessageResult,
    ElicitResult,
    HandlerContext,
    HostHandlers,
    MCPError,
    RequestTimeoutError,
    Root,
    Server,
    TextContent,
)
from tests.helpers import WAIT
from tests.spec import validate
from tests.wire import WireRecorder

server = Server("asker")


@dataclass
class Contact:
    name: str
    age: int = 30
    subscribe: bool = False


@server.tool()
def ask_contact(ctx: HandlerContext) -> str:
    answer = ctx.elicit("Who are you?", Contact)
    if not answer.accepted:
        return f"user said {answer.action}"
    return f"{answer.data.name} ({answer.data.age}, {answer.data.subscribe})"


@server.tool()
def ask_url(ctx: HandlerContext) -> str:
    return ctx.elicit_url("Please sign in", "https://example.com/login").action


@server.tool()
def summarize(ctx: HandlerContext, text: str) -> str:
    reply = ctx.sample(f"Summarize: {text}", max_tokens=50, system_prompt="Be brief.")
    return f"{reply.model}: {reply.text}"


@server.tool()
def roots(ctx: HandlerContext) -> list[str]:
    return [root.uri for root in ctx.list_roots()]


@server.tool()
def wait_for_user(ctx: HandlerContext) -> str:
    ctx.elicit("Take your time", {"type": "object", "properties": {}})
    return "answered"


def elicitation(params):
    if params.mode == "url":
        return ElicitResult("accept")
    assert params.requested_schema["properties"]["age"]["default"] == 30
    return {"action": "accept", "content": {"name": "Ada", "subscribe": True}}


def sampling(params):
    assert params.max_tokens == 50 and params.system_prompt == "Be brief."
    assert params.messages[0].content.text == "Summarize: long text"
    return CreateMessageResult(role="assistant", content=TextContent("short"), model="m-1",
                               stop_reason="endTurn")


def test_elicitation_sampling_roots_from_blocking_tools():
    recorder = WireRecorder().install(server)
    try:
        with Client.memory(server, host=HostHandlers(elicitation=elicitation, sampling=sampling,
                           roots=[Root("file:///work", name="work")])) as client:
            assert client.call_tool("ask_contact").text == "Ada (30, True)"
            assert client.call_tool("ask_url").text == "accept"
            assert client.call_tool("summarize", {"text": "long text"}).text == "m-1: short"
            assert client.call_tool("roots").structured_content == {"result": ["file:///work"]}
    finally:
        server.recv_middleware.remove(recorder.recv)
        server.send_middleware.remove(recorder.send)
    requests = {w["method"]: w for w, _ in recorder.pairs() if "id" in w and "method" in w}
    validate("2025-11-25", "ElicitRequest", requests["elicitation/create"])
    validate("2025-11-25", "CreateMessageRequest", requests["sampling/createMessage"])
    validate("2025-11-25", "ListRootsRequest", requests["roots/list"])


def test_declined_elicitation():
    with Client.memory(server,
                       host=HostHandlers(elicitation=lambda p: {"action": "decline"})) as client:
        assert client.call_tool("ask_contact").text == "user said decline"


def test_missing_capability_is_refused_before_sending():
    asked = []
    with Client.memory(server, host=HostHandlers(sampling=lambda p: asked.append(p))) as client:
        result = client.call_tool("ask_contact")
        assert result.is_error and "elicitation" in result.text
        result = client.call_tool("roots")
        assert result.is_error and "roots" in result.text
    assert asked == []


def test_roots_change_is_announced():
    got = threading.Event()
    server2 = Server("roots-watch")

    @server2.notification_handler("notifications/roots/list_changed")
    def changed(session, params):
        got.set()

    with Client.memory(server2, host=HostHandlers(roots=lambda: [Root("file:///a")])) as client:
        client.set_roots([Root("file:///b")])
        assert got.wait(WAIT)


def test_cancelling_the_tool_cancels_the_elicitation_on_the_client():
    entered, cancelled = threading.Event(), threading.Event()

    def slow_user(params, request):
        entered.set()
        if request.cancelled.wait(WAIT):
            cancelled.set()
        return {"action": "cancel"}

    with Client.memory(server, host=HostHandlers(elicitation=slow_user)) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("wait_for_user", timeout=0.3)
        assert entered.is_set()
        assert cancelled.wait(WAIT)
        client.ping()


def test_python_logging_is_forwarded_from_the_handler_thread():
    import logging

    logs_server = Server("logs")
    app_log = logging.getLogger("tests.app")
    app_log.setLevel(logging.DEBUG)

    @logs_server.tool()
    def work(ctx: HandlerContext) -> str:
        with ctx.forward_logging("tests.app"):
            app_log.info("step one")
            app_log.warning("careful")
        app_log.error("not forwarded: outside the block")
        return "ok"

    seen = []
    with Client.memory(logs_server, on_log=seen.append) as client:
        client.call_tool("work")
    assert [(m.level, m.data, m.logger) for m in seen] == [
        ("info", "step one", "tests.app"), ("warning", "careful", "tests.app")]


def test_url_elicitation_and_its_completion_notification():
    url_server = Server("url")
    notes = []
    got = threading.Event()

    @url_server.tool()
    def login(ctx: HandlerContext) -> str:
        answer = ctx.elicit_url("Sign in", "https://example.com/auth", elicitation_id="e-1")
        ctx.elicitation_complete("e-1")
        return answer.action

    def on_note(method, params):
        notes.append((method, params))
        got.set()

    seen = []

    def handler(params):
        seen.append((params.mode, params.url, params.elicitation_id))
        return {"action": "accept"}

    with Client.memory(url_server, host=HostHandlers(elicitation=handler),
                       on_notification=on_note) as c:
        assert c.call_tool("login").text == "accept"
        assert got.wait(WAIT)
    assert seen == [("url", "https://example.com/auth", "e-1")]
    assert notes == [("notifications/elicitation/complete", {"elicitationId": "e-1"})]


def test_a_reverse_call_that_times_out_still_answers_the_tool_call():
    slow_server = Server("slow-user")

    @slow_server.tool()
    def ask(ctx: HandlerContext) -> str:
        ctx.elicit("anyone?", {"type": "object", "properties": {}}, timeout=0.2)
        return "answered"

    release = threading.Event()

    def never(params, request):
        request.cancelled.wait(WAIT)  # the server gives up first and cancels this
        release.set()
        return {"action": "cancel"}

    with Client.memory(slow_server, host=HostHandlers(elicitation=never)) as client:
        result = client.call_tool("ask", timeout=WAIT)
        assert result.is_error and "timed out" in result.text
        assert release.wait(WAIT)


def test_a_handler_leaking_a_child_cancellation_is_still_answered():
    from mcpsync import RequestCancelledError

    leaky = Server("leaky")

    @leaky.method_handler("x/leak")
    def leak(ctx, params):
        raise RequestCancelledError("some child call was cancelled")

    with Client.memory(leaky) as client, pytest.raises(MCPError) as info:
        client.request("x/leak", timeout=WAIT)
    assert info.value.code == -32603
