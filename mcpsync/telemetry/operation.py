"""One operation being recorded: a span (maybe), a duration (maybe), and how it ended.

Made only when there is something to record (see :class:`~.instrumentation.
Instrumentation`); the hot path without an SDK never builds one. Not thread-safe: the
thread that began it ends it (a server operation is the handler's thread's current span
until then), except :meth:`event`, which a handler's own threads may call meanwhile
(the span's own lock guards it, the counter is advisory).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..errors import INTERNAL_ERROR, MCPError, RequestTimeoutError
from ..protocol.methods import VIEWS
from .attributes import error_attributes

#: The methods whose result may be a tool error (``isError``).
_TOOL_METHODS: Final = VIEWS.tool_methods


class Operation:
    """A request or notification in flight, on either side (or a task's run)."""

    __slots__ = ("_attributes", "_context_api", "_duration", "_ended", "_events",
                 "_max_events", "_span", "_start", "_status", "_token", "on_result")

    def __init__(self, span: Any, token: object, duration: Any,
                 metric_attributes: dict[str, Any], max_events: int,
                 status: Any, context_api: Any) -> None:
        self._span = span  # None when only metrics are recorded
        self._token = token  # the attached context on the handler's thread, or None
        self._duration = duration  # a Histogram, or None
        self._attributes = metric_attributes
        self._max_events = max_events
        self._events = 0
        self._status = status  # opentelemetry.trace.StatusCode
        self._context_api = context_api
        self._start = time.perf_counter()
        self._ended = False
        #: Called with a successful result before the operation ends (or ``None``).
        self.on_result: Callable[[Mapping[str, Any]], None] | None = None

    @property
    def span(self) -> Any:
        """The span (``None`` when only metrics are recorded)."""
        return self._span

    def traceparent(self) -> str | None:
        """The span's W3C ``traceparent`` (``None`` without a span)."""
        if self._span is None:
            return None
        context = self._span.get_span_context()
        return (f"00-{context.trace_id:032x}-{context.span_id:016x}-"
                f"{int(context.trace_flags):02x}")

    def set_attribute(self, key: str, value: Any) -> None:
        if self._span is not None:
            self._span.set_attribute(key, value)

    def event(self, name: str, attributes: Mapping[str, Any]) -> bool:
        """Add a span event (a progress or log notification sent on the operation's
        behalf), up to the bound; False once past it."""
        if self._span is None or self._events >= self._max_events:
            return False
        self._events += 1
        self._span.add_event(name, dict(attributes))
        return True

    # -- how it ended --------------------------------------------------------------------

    def succeeded(self, result: Mapping[str, Any] | None = None) -> None:
        """A result. A ``tools/call`` result with ``isError`` is an error
        (``error.type = tool_error``), as the conventions say."""
        if self.on_result is not None and isinstance(result, Mapping):
            self.on_result(result)
        if isinstance(result, Mapping) and result.get("isError") is True \
                and self._attributes.get("mcp.method.name") in _TOOL_METHODS:
            self._end({"error.type": "tool_error"}, None)
        else:
            self._end(None, None)

    def failed(self, code: int, message: str) -> None:
        """An error answer: its code is the error type; its message the description."""
        self._end(error_attributes(code), message if isinstance(message, str) else None)

    def raised(self, exc: BaseException) -> None:
        """An exception. An :class:`~mcpsync.errors.MCPError` is its error answer; a
        timeout is ``timeout``; anything else is named by its class, and its text (which
        may hold the arguments, or secrets) is recorded nowhere."""
        if isinstance(exc, RequestTimeoutError):
            self._end({"error.type": "timeout"}, "timed out")
            return
        if isinstance(exc, MCPError):
            self.failed(exc.code, exc.message)
            return
        kind = type(exc).__qualname__
        extra = {"error.type": kind, "rpc.response.status_code": str(INTERNAL_ERROR)}
        if self._span is not None:
            self._span.add_event("exception", {"exception.type": kind})
        self._end(extra, "Internal error")

    def _end(self, error: dict[str, str] | None, description: str | None) -> None:
        if self._ended:
            return
        self._ended = True
        elapsed = time.perf_counter() - self._start
        span = self._span
        if span is not None:
            if error is not None:
                span.set_attributes(error)
                span.set_status(self._status.ERROR, description)
            span.end()
            if self._token is not None:
                self._context_api.detach(self._token)
        if self._duration is not None:
            attributes = self._attributes if error is None else {**self._attributes, **error}
            self._duration.record(elapsed, attributes)


#: The operation whose handler runs on this thread: a request's (set around the handler
#: by ``dispatch.inbound``) or a task's (set around the task's body by
#: ``Instrumentation.traced_task``). What the handler's context sends on its behalf
#: (progress, log messages) becomes events of its span (``dispatch.inbound.note_sent``).
#: It lives here, not with either of them, so both can set it without importing the other.
current: contextvars.ContextVar[Operation | None] = contextvars.ContextVar(
    "mcpsync_operation", default=None)
