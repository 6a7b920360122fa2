"""The requests a proxy is forwarding, and how the remote server's questions reach the
proxy's own client.

While a forwarded request is in flight, the remote server may ask the proxy's client
something (``elicitation/create``, ``sampling/createMessage``, ``roots/list``): as a real
request (handshake era, on one of the client's handler threads) or as a 2026-07-28 input
request (answered on the thread making the call). Either way the question is the one
forwarded request's, and is asked, as it came, of the client that sent that request:

* that client speaks the handshake era: ``ctx.request`` sends it as a real request and
  the answer goes back to the remote;
* it speaks 2026-07-28: the proxy ends its attempt with an ``InputRequiredResult``
  (cancelling the remote call, if one is waiting on the answer); the client's retry runs
  the forwarded request again from the start, and this time the question is answered from
  the retry's ``inputResponses``. The remote tool therefore runs again on each round, as a
  2026-07-28 handler does anyway.

Which forwarded request a question belongs to: the one made on the asking thread; else,
for a handshake-era remote (whose questions say nothing of the request they serve), the
only one in flight. With several in flight such a question can not be attributed and is
refused, rather than risk asking one caller what another's tool wants to know.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Final

from ..client.tracking import TrackedCall
from ..dispatch.context import HandlerContext
from ..dispatch.ports import MRTR_METHODS, QuestionKeys, verified_answers
from ..dispatch.questions import InputRequired
from ..errors import (
    MISSING_CLIENT_CAPABILITY,
    MCPError,
    MethodNotFoundError,
    RequestCancelledError,
)
from ..protocol.methods import VIEWS
from ..protocol.versions import features

#: The capability a client declares to be asked each question.
NEEDS: Final = VIEWS.question_needs


def is_modern(ctx: HandlerContext) -> bool:
    """Whether the request being served came in 2026-07-28 (stateless) form."""
    version = ctx.session.protocol_version
    try:
        return version is not None and features(version).era == "modern"
    except KeyError:
        return False


class ForwardedCall:
    """One request being forwarded: its context, the remote requests it sent, and the
    question that ended a 2026-07-28 attempt. Thread-safe."""

    def __init__(self, ctx: HandlerContext, tracked: TrackedCall) -> None:
        self.ctx = ctx
        self.tracked = tracked
        self.thread = threading.get_ident()
        self.modern = is_modern(ctx)
        #: This attempt's answers, by question key (2026-07-28 and a method that may ask).
        self._answers: dict[str, Any] | None = (
            verified_answers(ctx.server._dispatcher.state_key, ctx.method, ctx.params)
            if self.modern and ctx.method in MRTR_METHODS else None)
        self._keys = QuestionKeys()
        self._lock = threading.Lock()
        #: The question that ended this attempt (2026-07-28), by its key.
        self.question: dict[str, Any] | None = None

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer of this call's client to the remote server's question."""
        capability = NEEDS.get(method)
        if capability is None:
            raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
        if not self.ctx.session.supports(capability):
            if self.modern:
                raise MCPError(f"Missing required client capability: {capability}",
                               code=MISSING_CLIENT_CAPABILITY,
                               data={"requiredCapabilities": {capability: {}}})
            raise MethodNotFoundError(
                f"the proxy's client does not support {method} (no {capability} capability)")
        if not self.modern:
            return self.ctx.request(method, params)
        if self._answers is None:
            raise MCPError(f"cannot ask {method} while serving {self.ctx.method} under "
                           f"2026-07-28: only tools/call, prompts/get and resources/read may "
                           "ask the client")
        key = self._keys.next()
        answer = self._answers.get(key)
        if isinstance(answer, dict):
            return dict(answer)
        question = {key: {"method": method, "params": params}}
        if threading.get_ident() == self.thread:
            raise InputRequired(question)  # ends the attempt: the client answers, retries
        with self._lock:
            self.question = question
        self.tracked.cancel("the proxy's client must answer a question first")
        raise RequestCancelledError(f"{method}: asked of the proxy's client; the call "
                                    "runs again once it has answered")


class CallTable:
    """The forwarded requests in flight, by the thread making each. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, ForwardedCall] = {}

    @contextlib.contextmanager
    def entered(self, call: ForwardedCall) -> Iterator[ForwardedCall]:
        with self._lock:
            self._calls[call.thread] = call
        try:
            yield call
        finally:
            with self._lock:
                self._calls.pop(call.thread, None)

    def sole(self) -> ForwardedCall | None:
        """The one call in flight, or None (none, or several)."""
        with self._lock:
            calls = list(self._calls.values())
        return calls[0] if len(calls) == 1 else None

    def asker(self) -> ForwardedCall:
        """The call a question arriving on this thread belongs to (see the module)."""
        with self._lock:
            call = self._calls.get(threading.get_ident())
            count = len(self._calls)
        if call is not None:
            return call
        sole = self.sole()
        if sole is None:
            why = "no call is in flight" if count == 0 else (
                f"{count} calls are in flight and the question does not say whose it is")
            raise MCPError(f"the proxy can not tell whose question this is: {why}")
        return sole
