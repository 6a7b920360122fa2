"""MRTR answers count only for questions the server asked, as bound by its ``requestState``.

A client (or anyone on the path) must not be able to skip a question by sending an
``inputResponses`` entry for it up front: without a ``requestState``, with the state of an
earlier round for a question asked only later, or with a state made for another request.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import Any

import pytest

from mcpsync import HandlerContext, Server
from mcpsync.protocol.jsonrpc import ErrorResponse, Request, Response
from mcpsync.transports.memory import memory_pair
from tests.spec import validate

MODERN = "2026-07-28"
CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}}
ACCEPT = {"action": "accept", "content": {"name": "Mallory"}}
SAMPLED = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "yes"}}


def make_server() -> tuple[Server, list[str]]:
    server = Server("binding", request_state_key="binding-key")
    seen: list[str] = []

    @server.tool()
    def approve(ctx: HandlerContext, item: str) -> str:
        name = ctx.elicit("who approves?", NAME_FORM).content["name"]
        seen.append(name)
        verdict = ctx.sample(f"may {name} approve {item}?", max_tokens=5).text
        return f"{name}:{verdict}"

    @server.prompt()
    def greet(ctx: HandlerContext) -> str:
        return "hello " + ctx.elicit("name?", NAME_FORM).content["name"]

    return server, seen


class Raw:
    def __init__(self, server: Server) -> None:
        self.end, server_end = memory_pair()
        self.session = server.connect(server_end)
        self._ids = itertools.count(1)
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="test-mrtr-reader",
                                        daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while (message := self.end.receive()) is not None:
            self._inbox.put(message)

    def call(self, method: str, params: dict[str, Any]) -> Response | ErrorResponse:
        params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                      "io.modelcontextprotocol/clientCapabilities": CAPS}}
        request_id = next(self._ids)
        self.end.send(Request(request_id, method, params))
        while True:
            reply = self._inbox.get(timeout=10.0)
            if isinstance(reply, (Response, ErrorResponse)) and reply.id == request_id:
                return reply

    def close(self) -> None:
        self.session.close()
        self.end.close()
        self._reader.join(5.0)


@pytest.fixture
def raw():
    server, seen = make_server()
    r = Raw(server)
    r.seen = seen  # type: ignore[attr-defined]
    yield r
    r.close()


CALL = {"name": "approve", "arguments": {"item": "payroll"}}


def test_answers_without_a_request_state_are_ignored(raw):
    reply = raw.call("tools/call", {**CALL, "inputResponses": {"q0": ACCEPT, "q1": SAMPLED}})
    assert isinstance(reply, Response), reply
    validate(MODERN, "InputRequiredResult", reply.result)
    assert reply.result["resultType"] == "input_required"
    assert [r["method"] for r in reply.result["inputRequests"].values()] == [
        "elicitation/create"]
    assert raw.seen == []


def test_an_answer_to_a_question_not_yet_asked_is_ignored(raw):
    first = raw.call("tools/call", CALL).result
    (key, _), = first["inputRequests"].items()
    # The client answers the first question and, up front, the one it guesses comes next.
    reply = raw.call("tools/call", {**CALL, "requestState": first["requestState"],
                                    "inputResponses": {key: ACCEPT, "q1": SAMPLED,
                                                       "bogus": SAMPLED}})
    second = reply.result
    assert second["resultType"] == "input_required", second
    assert [r["method"] for r in second["inputRequests"].values()] == [
        "sampling/createMessage"]
    (key2, _), = second["inputRequests"].items()
    done = raw.call("tools/call", {**CALL, "requestState": second["requestState"],
                                   "inputResponses": {key2: SAMPLED}}).result
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "Mallory:yes"


def test_an_earlier_answer_cannot_be_replaced_on_a_later_round(raw):
    first = raw.call("tools/call", CALL).result
    (key, _), = first["inputRequests"].items()
    second = raw.call("tools/call", {**CALL, "requestState": first["requestState"],
                                     "inputResponses": {key: ACCEPT}}).result
    (key2, _), = second["inputRequests"].items()
    other = {"action": "accept", "content": {"name": "Eve"}}
    done = raw.call("tools/call", {**CALL, "requestState": second["requestState"],
                                   "inputResponses": {key: other, key2: SAMPLED}}).result
    assert done["content"][0]["text"] == "Mallory:yes"


def test_a_state_from_another_method_is_refused(raw):
    prompt = raw.call("prompts/get", {"name": "greet"}).result
    assert prompt["resultType"] == "input_required"
    (key, _), = prompt["inputRequests"].items()
    reply = raw.call("tools/call", {**CALL, "requestState": prompt["requestState"],
                                    "inputResponses": {key: ACCEPT}})
    assert isinstance(reply, ErrorResponse) and reply.error["code"] == -32602
    assert raw.seen == []


def test_an_answer_of_the_wrong_kind_is_asked_again(raw):
    first = raw.call("tools/call", CALL).result
    (key, _), = first["inputRequests"].items()
    for wrong in ("accept", None, ["x"]):
        again = raw.call("tools/call", {**CALL, "requestState": first["requestState"],
                                        "inputResponses": {key: wrong}}).result
        assert again["resultType"] == "input_required"
        assert list(again["inputRequests"]) == [key]
    assert raw.seen == []
