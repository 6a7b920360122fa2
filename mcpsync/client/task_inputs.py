"""The questions a v2 task asks while it runs, and their answers.

A v2 task that needs input says so in ``tasks/get`` (``status: "input_required"`` with
``inputRequests``: key -> an elicitation, sampling or roots request). The client answers
them with its handlers, or the application by hand (:meth:`TaskHandle.respond
<mcpsync.client.tasks.TaskHandle.respond>`), with ``tasks/update``. A ``tasks/get`` may
race with an update and show questions already answered: each key is answered once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..codec import to_wire
from ..errors import ProtocolStateError

#: How many answered v2 input keys one handle remembers (so that a ``tasks/get`` that raced
#: with our ``tasks/update`` does not ask the user twice); the oldest are forgotten first.
MAX_REMEMBERED_INPUT_KEYS: Final = 1024

#: ``request(method, params, timeout)``: one request on the client's connection (with the
#: era's envelope), the raw result back.
Request = Callable[[str, dict[str, Any], float], dict[str, Any]]
#: ``answer(method, params)``: a host handler's wire answer to one input request.
Answer = Callable[[str, dict[str, Any]], dict[str, Any]]


class TaskInputs:
    """The input keys of one task answered so far (bounded, oldest forgotten first), and
    the means to answer more. Thread-safe: a key one thread is answering is reserved, so
    another thread waiting on the same task skips it; a failed answer frees it again."""

    def __init__(self, task_id: str | None, request: Request, answer: Answer) -> None:
        self._task_id = task_id
        self._request = request
        self._answer = answer
        self._lock = threading.Lock()
        #: v2 input keys answered (or being answered), oldest first.
        self._answered: dict[str, bool] = {}

    def answer(self, input_requests: Mapping[str, Any], timeout: Callable[[], float]) -> None:
        """Answer with the client's handlers the questions not answered yet; ``timeout()``
        is what is left for the ``tasks/update`` once the handlers have answered."""
        pending: dict[str, tuple[str, dict[str, Any]]] = {}
        with self._lock:
            for key, request in input_requests.items():
                if key in self._answered:
                    continue
                if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                    raise ProtocolStateError(
                        f"task {self._task_id}: malformed input request {key!r}")
                params = request.get("params")
                pending[key] = (request["method"], params if isinstance(params, dict) else {})
                self._answered[key] = True  # reserved: another waiting thread skips it
            self._forget_oldest()
        if not pending:
            return
        try:
            answers = {key: self._answer(method, params)
                       for key, (method, params) in pending.items()}
            self._update(answers, timeout())
        except BaseException:
            with self._lock:
                for key in pending:
                    self._answered.pop(key, None)
            raise

    def respond(self, responses: Mapping[str, Any], timeout: float) -> None:
        """Send answers given by hand (key -> a result object or a wire dict)."""
        answers = {key: _wire_answer(key, value) for key, value in responses.items()}
        self._update(answers, timeout)
        with self._lock:  # answered: a wait() in progress must not ask the handlers again
            for key in answers:
                self._answered[key] = True
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        while len(self._answered) > MAX_REMEMBERED_INPUT_KEYS:
            del self._answered[next(iter(self._answered))]

    def _update(self, answers: dict[str, Any], timeout: float) -> None:
        self._request("tasks/update", {"taskId": self._task_id, "inputResponses": answers},
                      timeout)


def _wire_answer(key: str, value: Any) -> dict[str, Any]:
    wire = to_wire(value)
    if not isinstance(wire, dict):
        raise TypeError(f"the answer to {key!r} must be a result object, not {type(value)!r}")
    return wire
