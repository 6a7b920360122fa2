"""The ports of a handler's context, the pairs it is built on, and the 2026-07-28 rounds.

There is one context type, :class:`~mcpsync.dispatch.context.HandlerContext`. What a
handler may do (``progress``, ``log``, ``request``, ``sleep``, ``check_cancelled``,
``elicit``…) is written once, over a pair of ports:

* an :class:`Outlet`, where its messages go: the request's own channel (tied to the
  request, closed with its response), the session's channel (a detached context), or the
  task store (a task's questions and status);
* a :class:`Lifetime`, how long it lives and what cancels it: the request (its
  ``cancelled`` event), the session (its ``ended`` event) or the task (its record in the
  store).

A request's context, a detached one and a task's differ only in the pair they are built
with (here; ``mcpsync.tasks.ports`` for a task's). The ports are Protocols, in
``dispatch/``, so that neither the engine's request nor the tasks extension is imported
for typing: they satisfy them.

A request's context (:class:`RequestOutlet`, :class:`RequestLifetime`) sends on the
request's channel, each message tied to the request, and ends when the response is
written: from then on anything that would be sent on the request's behalf raises
:class:`~mcpsync.errors.ContextClosedError`, because the peer has stopped listening for it.
A detached context (:class:`SessionOutlet`, :class:`SessionLifetime`) is cut loose from its
request: it sends on the session's own channel (the stdio stream, the HTTP GET stream) and
lives as long as the session.

:class:`SessionInfo` (what a server knows of the client on the other end) is here because
two sides read it that must not read each other: the handler context (``context.py``) and
the requests it sends back (``reverse.py``, which gets the context's session info and its
outlet port, never the context itself); both already read the ports.

The last section reads the answers a 2026-07-28 retry carries (multi round-trip requests:
what the client answered to the questions asked in earlier rounds through
:func:`ask_together`, as its sealed ``requestState`` proves). Read by the stateless server
and by a proxy's forwarders, which sit on two sides of the server package, so it lives
below both.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..errors import (
    ContextClosedError,
    InvalidParamsError,
    MCPError,
    PeerRequestError,
    RequestCancelledError,
)
from ..protocol.jsonrpc import RequestId
from ..protocol.methods import VIEWS
from ..protocol.request_state import InvalidRequestState, RequestState, unseal
from ..transports.base import StreamControl
from .inbound import Inbound, current_transport
from .inbound import RequestFacts as RequestFacts  # where contexts import it
from .outbound import OutboundChannel
from .principal import principal_key
from .questions import InputRequired

logger = logging.getLogger("mcpsync.context")


@dataclass
class SessionInfo:
    """What is known about the peer on the other end of a request.

    In the handshake era it comes from ``initialize`` and lasts the session; in the
    stateless era it comes from each request's ``_meta``.
    """

    protocol_version: str | None = None
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None

    def supports(self, capability: str, sub: str | None = None) -> bool:
        """Whether the client declared ``capability`` (and ``sub`` inside it)."""
        value = self.client_capabilities.get(capability)
        if not isinstance(value, dict):
            return False
        return sub is None or bool(value.get(sub))


class SessionHandle(Protocol):
    """What a context needs from the session it runs in (implemented by the server)."""

    @property
    def info(self) -> SessionInfo: ...

    @property
    def connection(self) -> OutboundChannel: ...

    @property
    def ended(self) -> threading.Event: ...

    def log_enabled(self, level: str) -> bool: ...


class ServedRequest(Inbound, Protocol):
    """An inbound request as a context serves it (the engine's ``InboundRequest``):
    ``done`` becomes true just before its response is written; ``connection`` is the
    channel it came in on."""

    @property
    def done(self) -> bool: ...

    @property
    def connection(self) -> OutboundChannel: ...


class Outlet(Protocol):
    """Where a context's messages go. Thread-safe."""

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (or drop it, where the outlet has no channel left)."""
        ...

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        """Ask the client ``method``; block for the result. An error answer raises
        :class:`~mcpsync.errors.PeerRequestError`."""
        ...

    def progress(self, token: str | int | None, progress: float, total: float | None,
                 message: str | None) -> None:
        """Report progress for the request (``token`` is its ``progressToken``, if any)."""
        ...

    def ask_all(self, questions: Sequence[Callable[[], Any]]) -> list[Any]:
        """Ask several questions at once (each a callable that asks one); the answers."""
        ...

    def close_stream(self) -> bool:
        """Drop the client's connection to the request's SSE stream; ``False`` where
        there is none to drop."""
        ...


class Lifetime(Protocol):
    """How long a context lives, and what cancels it. Thread-safe."""

    @property
    def cancelled(self) -> threading.Event:
        """Set once the work is cancelled (the event itself, for waiting on)."""
        ...

    @property
    def closed(self) -> bool:
        """True once nothing may be sent on the request's behalf any more."""
        ...

    def check_cancelled(self) -> None:
        """Raise :class:`~mcpsync.errors.RequestCancelledError` once cancelled."""
        ...

    def sleep(self, seconds: float) -> None:
        """Sleep, but wake and raise at once when cancelled."""
        ...


def ask_together(questions: Sequence[Callable[[], Any]]) -> list[Any]:
    """Ask several questions at once; their answers, in order.

    Under 2026-07-28 every unanswered one goes into the same ``InputRequiredResult``, so
    the client answers them in one round instead of one round each. In the handshake era
    they are asked one after another, as real requests.
    """
    answers: list[Any] = []
    pending: dict[str, Any] = {}
    for ask in questions:
        try:
            answers.append(ask())
        except InputRequired as question:
            pending.update(question.requests)
            answers.append(None)
    if pending:
        raise InputRequired(pending)
    return answers


def progress_params(token: str | int, progress: float, total: float | None,
                    message: str | None) -> dict[str, Any]:
    """The params of a ``notifications/progress``."""
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return params


class RequestLifetime:
    """A request's lifetime: cancelled with the request (by the caller, the session's end
    or the server's stop), closed when its response is written."""

    __slots__ = ("_inbound",)

    def __init__(self, inbound: ServedRequest) -> None:
        self._inbound = inbound

    @property
    def cancelled(self) -> threading.Event:
        return self._inbound.cancelled

    @property
    def closed(self) -> bool:
        return self._inbound.done

    def check_cancelled(self) -> None:
        if self._inbound.cancelled.is_set():
            inbound = self._inbound
            raise RequestCancelledError(f"{inbound.method} (id {inbound.id!r}) was cancelled")

    def sleep(self, seconds: float) -> None:
        if self._inbound.cancelled.wait(seconds):
            self.check_cancelled()


class RequestOutlet:
    """A request's own channel: every message is tied to the request (its HTTP stream),
    a reverse request is cancelled with it, and nothing goes out once it is answered."""

    __slots__ = ("_inbound", "_last_progress", "_progress_lock", "_session")

    def __init__(self, inbound: ServedRequest, session: SessionHandle) -> None:
        self._inbound = inbound
        self._session = session
        self._last_progress: float | None = None
        self._progress_lock = threading.Lock()

    def _related(self) -> RequestId | None:
        inbound = self._inbound
        if inbound.done:
            raise ContextClosedError(
                f"the response to {inbound.method} (id {inbound.id!r}) has been sent; "
                "use ctx.detach() for work that outlives the request"
            )
        return inbound.id

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._session.connection.notify(method, params, related_request_id=self._related())

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        # An error answer is never let through as the client's own error: it must not
        # answer this request with the client's code.
        related = self._related()
        try:
            return self._session.connection.request(
                method, params, timeout=timeout, parent=related, related_request_id=related
            )
        except MCPError as exc:
            raise PeerRequestError(method, exc) from exc

    def progress(self, token: str | int | None, progress: float, total: float | None,
                 message: str | None) -> None:
        # The spec requires each value to exceed the last: one that does not is dropped
        # (with a warning in the log) rather than sent.
        if token is None:
            return
        with self._progress_lock:
            if self._last_progress is not None and progress <= self._last_progress:
                logger.warning("progress %r not above %r: dropped", progress, self._last_progress)
                return
            self._last_progress = progress
        self.notify("notifications/progress", progress_params(token, progress, total, message))

    def ask_all(self, questions: Sequence[Callable[[], Any]]) -> list[Any]:
        return ask_together(questions)

    def close_stream(self) -> bool:
        transport = getattr(self._inbound.connection, "transport", None)
        if not isinstance(transport, StreamControl):
            return False  # stdio, memory, or a 2026-07-28 request's own channel
        return transport.close_stream(self._inbound.id)


class SessionLifetime:
    """A detached context's lifetime: the session's. Never closed; cancelled when the
    session ends."""

    __slots__ = ("_ended",)

    def __init__(self, ended: threading.Event) -> None:
        self._ended = ended

    @property
    def cancelled(self) -> threading.Event:
        return self._ended

    @property
    def closed(self) -> bool:
        return False

    def check_cancelled(self) -> None:
        if self._ended.is_set():
            raise RequestCancelledError("the session has ended")

    def sleep(self, seconds: float) -> None:
        if self._ended.wait(seconds):
            self.check_cancelled()


class SessionOutlet:
    """The session's own channel, tied to no request. Progress still belongs to the
    request the context was cut from: it goes there while that request runs, and is
    dropped afterwards (the spec forbids progress after the response)."""

    __slots__ = ("_origin", "_origin_lifetime", "_session")

    def __init__(self, session: SessionHandle, origin: Outlet, origin_lifetime: Lifetime) -> None:
        self._session = session
        self._origin = origin
        self._origin_lifetime = origin_lifetime

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._session.connection.notify(method, params)

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        try:
            return self._session.connection.request(method, params, timeout=timeout)
        except MCPError as exc:
            raise PeerRequestError(method, exc) from exc

    def progress(self, token: str | int | None, progress: float, total: float | None,
                 message: str | None) -> None:
        if not self._origin_lifetime.closed:
            try:
                self._origin.progress(token, progress, total, message)
            except ContextClosedError:
                pass  # the response went out between the check and the send

    def ask_all(self, questions: Sequence[Callable[[], Any]]) -> list[Any]:
        return ask_together(questions)

    def close_stream(self) -> bool:
        return False  # the request's stream is not this context's


# -- the answers of a 2026-07-28 retry (multi round-trip requests) --

#: The methods whose results may be ``input_required`` (and retried with answers): the
#: method table's rows that may ask questions.
MRTR_METHODS: Final = VIEWS.asks


class QuestionKeys:
    """The keys of the questions one 2026-07-28 attempt asks, in the order it asks them:
    ``q0``, ``q1``... A retry runs the handler again from the start, so the n-th question
    gets the same key on every attempt, and the sealed state's answers find it. One rule
    for every asker (a handler's ``ctx.elicit``, a proxy forwarding its remote's
    questions). Thread-safe: a handler may ask from several threads (``ask_all``)."""

    __slots__ = ("_lock", "_next")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0

    def next(self) -> str:
        with self._lock:
            key = f"q{self._next}"
            self._next += 1
        return key


def request_principal() -> str:
    """Who is asking (the auth layer's principal in this request's transport context), as
    the one opaque key of :func:`~mcpsync.dispatch.principal.principal_key`: a
    ``requestState`` is bound to it, so another caller cannot replay it."""
    transport = current_transport()
    return principal_key(transport.auth if transport is not None else None)


def retry_answers(key: bytes, method: str, params: dict[str, Any]) -> dict[str, Any]:
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
    return {question: entry["result"]
            for question, entry in retry_answers(key, method, params).items()
            if isinstance(entry, dict) and isinstance(entry.get("result"), dict)}
