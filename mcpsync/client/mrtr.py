"""Multi round-trip requests (2026-07-28) on the client: the retry loop and manual mode.

A ``tools/call``, ``prompts/get`` or ``resources/read`` may be answered with an
``InputRequiredResult``: questions (``inputRequests``, any number per round) and an opaque
``requestState``. The client retries the same request with a new id, ``inputResponses``
for every question and the state echoed verbatim, until the result is ``complete``.

* ``input_mode="auto"`` (the default): the client's host handlers answer every question
  of every round, at most ``max_input_rounds`` retries.
* ``input_mode="manual"``: the call raises :class:`InputRequiredError`; the caller answers
  the questions however it likes and calls :meth:`InputRequiredError.retry`, which
  returns what the original call would have (or raises again for the next round).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..codec import from_wire, to_wire
from ..errors import MCPSyncError, ProtocolStateError
from ..protocol.deadline import Deadline
from ..types.client_features import CreateMessageRequestParams, ElicitRequestParams
from .budget import left

INPUT_MODES: Final = ("auto", "manual")

#: ``send(params, timeout)``: one retry on the wire, returning the raw result.
Send = Callable[[dict[str, Any], "float | None"], dict[str, Any]]
#: ``answer(method, params)``: a host handler's wire result for one question.
Answer = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class InputRequest:
    """One question of an ``InputRequiredResult``."""

    key: str
    method: str
    params: dict[str, Any]

    def typed_params(self) -> Any:
        """The params as :class:`~mcpsync.types.ElicitRequestParams` or
        :class:`~mcpsync.types.CreateMessageRequestParams`; the raw dict otherwise."""
        if self.method == "elicitation/create":
            return from_wire(ElicitRequestParams, self.params)
        if self.method == "sampling/createMessage":
            return from_wire(CreateMessageRequestParams, self.params)
        return self.params


class InputRequiredError(MCPSyncError):
    """A request made with ``input_mode="manual"`` needs answers before it can complete.

    Not an error from the server: its (2026-07-28) answer was an ``InputRequiredResult``.
    ``requests`` maps each key to an :class:`InputRequest`; answer every one and call
    :meth:`retry`.
    """

    def __init__(self, method: str, result: dict[str, Any], requests: dict[str, InputRequest],
                 round_number: int, retry: Callable[[Mapping[str, Any], float | None], Any]):
        keys = ", ".join(f"{k} ({r.method})" for k, r in requests.items()) or "none"
        super().__init__(f"{method} needs input (round {round_number}): {keys}")
        self.method = method
        #: The raw ``InputRequiredResult``.
        self.result = result
        self.requests = requests
        #: The opaque state the retry echoes (None when the server sent none).
        self.request_state: str | None = result.get("requestState")
        #: 1 for the first round of questions, 2 for the next, …
        self.round = round_number
        self._retry = retry

    def retry(self, responses: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        """Send the retry with ``responses`` (key -> ``ElicitResult``,
        ``CreateMessageResult``, ``{"roots": [...]}`` or any wire dict). Returns what the
        original call returns; raises :class:`InputRequiredError` for the next round."""
        missing = set(self.requests) - set(responses)
        if missing:
            raise ValueError(f"no answer for {', '.join(sorted(missing))}")
        return self._retry(responses, timeout)


def _questions(method: str, result: dict[str, Any]) -> dict[str, InputRequest]:
    raw = result.get("inputRequests") or {}
    if not isinstance(raw, dict):
        raise ProtocolStateError(f"{method}: malformed inputRequests")
    questions = {}
    for key, item in raw.items():
        if not isinstance(item, dict) or not isinstance(item.get("method"), str):
            raise ProtocolStateError(f"{method}: malformed input request {key!r}")
        params = item.get("params")
        questions[key] = InputRequest(key, item["method"], params if isinstance(
            params, dict) else {})
    return questions


def _wire_answers(responses: Mapping[str, Any]) -> dict[str, Any]:
    answers = {}
    for key, value in responses.items():
        wire = to_wire(value)
        if not isinstance(wire, dict):
            raise TypeError(f"the answer to {key!r} must be a result object, not "
                            f"{type(value)!r}")
        answers[key] = wire
    return answers


def _retry_params(params: dict[str, Any], result: dict[str, Any],
                  answers: dict[str, Any]) -> dict[str, Any]:
    retry = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
    retry["inputResponses"] = answers
    if "requestState" in result:
        retry["requestState"] = result["requestState"]
    return retry


def resolve(method: str, params: dict[str, Any], result: dict[str, Any], *, send: Send,
            answer: Answer | None, max_rounds: int, convert: Callable[[dict[str, Any]], Any],
            retries: int = 0, deadline: Deadline | None = None) -> Any:
    """Follow ``result`` to a complete one. ``answer=None`` is manual mode. In auto mode
    every retry takes what is left of the call's ``deadline``: the rounds are one call, as
    the handshake era's server requests happen inside one call whose deadline runs on."""
    while True:
        kind = result.get("resultType", "complete")
        if kind == "complete" or (kind == "task" and method == "tools/call"):
            return convert(result)  # a task (SEP-2663) is followed by convert
        if kind != "input_required":
            raise ProtocolStateError(f"{method}: unknown result type {kind!r}")
        if retries >= max_rounds:
            raise ProtocolStateError(
                f"{method}: still asking for input after {max_rounds} rounds")
        questions = _questions(method, result)
        if answer is None:
            raise InputRequiredError(
                method, result, questions, retries + 1,
                _manual_retry(method, params, result, send, max_rounds, convert, retries))
        answers = {key: answer(q.method, q.params) for key, q in questions.items()}
        result = send(_retry_params(params, result, answers),
                      None if deadline is None else left(deadline))
        retries += 1


def _manual_retry(method: str, params: dict[str, Any], result: dict[str, Any], send: Send,
                  max_rounds: int, convert: Callable[[dict[str, Any]], Any],
                  retries: int) -> Callable[[Mapping[str, Any], float | None], Any]:
    def retry(responses: Mapping[str, Any], timeout: float | None) -> Any:
        retry_params = _retry_params(params, result, _wire_answers(responses))
        following = send(retry_params, timeout)
        return resolve(method, retry_params, following, send=send, answer=None,
                       max_rounds=max_rounds, convert=convert, retries=retries + 1)

    return retry


__all__ = ["INPUT_MODES", "InputRequest", "InputRequiredError", "resolve"]
