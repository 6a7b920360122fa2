"""Custom server→client methods and per-method notification handlers on the client.

A mcpsync server's tool sends ``x/custom`` with ``ctx.request`` and the client answers it
with a handler from ``client.method_handler`` (or ``Client(host=HostHandlers(methods=...))``); a
method the client does not know is -32601 to the server; a custom notification reaches
``client.notification_handler``. Over memory, a real stdio subprocess and real HTTP in
the handshake era (notifications in 2026-07-28 too, which has no server→client requests
and can not carry a custom one).
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpsync import (
    Client,
    DuplicateHandlerError,
    HostHandlers,
    HostRequest,
    InvalidParamsError,
    ProtocolStateError,
)
from tests.client.custom_methods_server import server
from tests.client.scripted import Scripted
from tests.helpers import WAIT
from tests.serving import client_over

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = ("memory", "stdio", "http")


def connect(kind: str, version: str = LEGACY,
            **options: Any) -> contextlib.AbstractContextManager[Client]:
    """A client of the custom-methods server over ``kind``."""
    return client_over(kind, server, "tests.client.custom_methods_server", version, **options)


def echo(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
    return {"echo": params.get("text"), "method": request.method,
            "hasId": request.request_id is not None}


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_custom_request_is_answered_by_the_registered_handler(kind: str) -> None:
    # One registered before connecting (constructor), one on the live client.
    with connect(kind, host=HostHandlers(methods={"x/custom": echo})) as client:
        @client.method_handler("x/later")
        def later(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
            return {"later": True}

        answer = json.loads(client.call_tool("ask_custom", {"text": "hi"}).text)
        assert answer == {"echo": "hi", "method": "x/custom", "hasId": True}
        assert json.loads(client.call_tool("ask_method", {"method": "x/later"}).text) == {
            "later": True}


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_a_method_the_client_does_not_know_is_32601_to_the_server(kind: str) -> None:
    with connect(kind, host=HostHandlers(methods={"x/custom": echo})) as client:
        text = client.call_tool("ask_method", {"method": "x/unknown"}).text
        assert text == "x/unknown -> -32601: Method not found: x/unknown"
        client.ping()


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_handler_exceptions_become_error_answers(kind: str) -> None:
    def refuses(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
        raise InvalidParamsError("Invalid params: no thanks")

    def breaks(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("a secret the server must not see")

    def not_a_result(request: HostRequest, params: dict[str, Any]) -> Any:
        return ["not", "a", "dict"]

    handlers = {"x/refuses": refuses, "x/breaks": breaks, "x/list": not_a_result}
    with connect(kind, host=HostHandlers(methods=handlers)) as client:
        def ask(method: str) -> str:
            return client.call_tool("ask_method", {"method": method}).text

        assert ask("x/refuses") == "x/refuses -> -32602: Invalid params: no thanks"
        assert ask("x/breaks") == "x/breaks -> -32603: Internal error"
        assert ask("x/list") == "x/list -> -32603: Internal error"


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_a_cancelled_custom_request_sets_the_handlers_event(kind: str) -> None:
    saw_cancel = threading.Event()

    def slow(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
        if request.cancelled.wait(WAIT):
            saw_cancel.set()
        return {}

    with connect(kind, host=HostHandlers(methods={"x/slow": slow})) as client:
        assert client.call_tool("ask_briefly", {"seconds": 0.3}).text == "timed out"
        assert saw_cancel.wait(WAIT), "the handler never saw the server's cancellation"


@pytest.mark.parametrize("version", (LEGACY, MODERN))
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_custom_notification_reaches_its_handlers_and_not_the_catch_all(
        kind: str, version: str) -> None:
    got: list[tuple[str, Any]] = []
    lock = threading.Lock()
    both = threading.Event()
    other = threading.Event()

    def first(params: dict[str, Any]) -> None:
        with lock:
            got.append(("first", params.get("text")))

    def second(params: dict[str, Any]) -> None:
        with lock:
            got.append(("second", params.get("text")))
        both.set()

    def catch_all(method: str, params: dict[str, Any]) -> None:
        with lock:
            got.append((method, params.get("text")))
        if method == "notifications/x/other":
            other.set()

    with connect(kind, version, host=HostHandlers(notifications={"notifications/x/custom": first}),
                 on_notification=catch_all) as client:
        assert client.protocol_version == version
        client.notification_handler("notifications/x/custom")(second)
        client.call_tool("announce", {"method": "notifications/x/custom", "text": "one"})
        assert both.wait(WAIT)
        client.call_tool("announce", {"method": "notifications/x/other", "text": "two"})
        assert other.wait(WAIT)
    assert got == [("first", "one"), ("second", "one"), ("notifications/x/other", "two")]


def test_a_failing_notification_handler_does_not_silence_the_next() -> None:
    reached = threading.Event()

    def fails(params: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    with connect("memory", host=HostHandlers(notifications={
            "notifications/x/custom": [fails, lambda params: reached.set()]})) as client:
        client.call_tool("announce", {"method": "notifications/x/custom", "text": "x"})
        assert reached.wait(WAIT)


def test_a_custom_handler_replaces_a_built_in_host_method() -> None:
    def my_roots(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": [{"uri": "file:///custom"}]}

    with connect("memory", host=HostHandlers(roots=[{"uri": "file:///given"}])) as client:
        before = json.loads(client.call_tool("ask_method", {"method": "roots/list"}).text)
        assert before == {"roots": [{"uri": "file:///given"}]}
        client.method_handler("roots/list")(my_roots)
        after = json.loads(client.call_tool("ask_method", {"method": "roots/list"}).text)
        assert after == {"roots": [{"uri": "file:///custom"}]}
        assert client.capabilities()["roots"] == {"listChanged": True}


def test_registering_a_custom_method_twice_needs_replace() -> None:
    with connect("memory", host=HostHandlers(methods={"x/custom": echo})) as client:
        with pytest.raises(DuplicateHandlerError, match="x/custom"):
            client.method_handler("x/custom")(echo)

        @client.method_handler("x/custom", replace=True)
        def shout(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
            return {"echo": str(params["text"]).upper()}

        assert json.loads(client.call_tool("ask_custom", {"text": "hi"}).text) == {
            "echo": "HI"}
    with pytest.raises(DuplicateHandlerError):
        Client.memory(server, host=HostHandlers(notifications={"notifications/x": [echo, echo]}))


def test_custom_methods_declare_no_capability() -> None:
    with connect("memory", host=HostHandlers(methods={"x/custom": echo})) as client:
        assert client.capabilities() == {}


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_the_modern_era_cannot_carry_a_custom_request(kind: str) -> None:
    # 2026-07-28 has no server→client requests; an input request may only be
    # elicitation/create, sampling/createMessage or roots/list. The tool hears so.
    called = threading.Event()

    def custom(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
        called.set()
        return {}

    with connect(kind, MODERN, host=HostHandlers(methods={"x/custom": custom})) as client:
        assert client.protocol_version == MODERN
        result = client.call_tool("ask_custom", {"text": "hi"})
        assert result.is_error
        assert "x/custom" in result.text and "2026-07-28" in result.text, result.text
    assert not called.is_set()


def test_the_client_refuses_a_custom_input_request_under_2026_07_28() -> None:
    # A server that puts a custom method into inputRequests anyway: the client's custom
    # handler is not an answer to it, and the call fails naming why.
    def script(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"resultType": "input_required", "requestState": "s",
                "inputRequests": {"q0": {"method": "x/custom", "params": {}}}}

    scripted = Scripted(script)
    called = threading.Event()
    try:
        with (scripted.client(host=HostHandlers(methods={
                "x/custom": lambda request, params: called.set() or {}})) as client,
              pytest.raises(ProtocolStateError, match="2026-07-28 allows only")):
            client.call_tool("anything")
    finally:
        scripted.close()
    assert not called.is_set()
