"""The port pairs of a request's context and of a detached one.

A request's context (:class:`RequestOutlet`, :class:`RequestLifetime`) sends on the
request's channel, each message tied to the request, and ends when the response is
written: from then on anything that would be sent on the request's behalf raises
:class:`~mcpsync.errors.ContextClosedError`, because the peer has stopped listening for it.

A detached context (:class:`SessionOutlet`, :class:`SessionLifetime`) is cut loose from its
request: it sends on the session's own channel (the stdio stream, the HTTP GET stream) and
lives as long as the session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ContextClosedError, MCPError, PeerRequestError, RequestCancelledError
from ..protocol.jsonrpc import RequestId
from ..transports.base import StreamControl
from .ports import Lifetime, Outlet, ServedRequest, SessionHandle
from .questions import InputRequired

logger = logging.getLogger("mcpsync.context")


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
