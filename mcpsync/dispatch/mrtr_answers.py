"""The answers a 2026-07-28 retry carries (multi round-trip requests): what the client
answered to the questions this server asked in earlier rounds, as its sealed
``requestState`` proves. Read by the stateless server and by a proxy's forwarders, which
sit on two sides of the server package, so it lives below both.
"""

from __future__ import annotations

import time
from typing import Any, Final

from ..errors import InvalidParamsError
from ..protocol.request_state import InvalidRequestState, RequestState, unseal
from .principal import principal_key
from .transport import current_transport

#: The methods whose results may be ``input_required`` (and retried with answers).
MRTR_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})


def request_principal() -> str:
    """Who is asking (the auth layer's principal in this request's transport context), as
    the one opaque key of :func:`~mcpsync.dispatch.principal.principal_key`: a
    ``requestState`` is bound to it, so another caller cannot replay it."""
    transport = current_transport()
    return principal_key(transport.auth if transport is not None else None)


def answers(key: bytes, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Answers from earlier rounds (the verified state, sealed with ``key``) plus this
    retry's responses to the questions that state says were asked; any other
    ``inputResponses`` key is ignored.

    Without a ``requestState`` no question was asked, so nothing counts as an answer: a
    client can not skip a question by answering it up front.
    """
    state = RequestState()
    raw_state = params.get("requestState")
    if raw_state is not None:
        try:
            state = unseal(key, raw_state, method, params, time.time(),
                           principal=request_principal())
        except InvalidRequestState as exc:
            raise InvalidParamsError(f"Invalid params: {exc}") from None
    responses = params.get("inputResponses")
    if responses is not None and not isinstance(responses, dict):
        raise InvalidParamsError('Invalid params: "inputResponses" must be an object')
    found = dict(state.answers)
    for question, asked_method in state.asked.items():
        value = (responses or {}).get(question)
        if isinstance(value, dict):
            found[question] = {"method": asked_method, "result": value}
    return found


def verified_answers(key: bytes, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The answers a retry carries, by question key: each the client's result object for
    a question asked (as the ``requestState`` sealed with ``key`` proves). For handlers
    that name their own questions instead of going through ``ctx.elicit`` and friends.
    -32602 (:class:`~mcpsync.errors.InvalidParamsError`) for a bad ``requestState``."""
    return {question: entry["result"] for question, entry in answers(key, method, params).items()
            if isinstance(entry, dict) and isinstance(entry.get("result"), dict)}
