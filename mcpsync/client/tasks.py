"""The client side of tasks: tool calls that outlive their request.

Two surfaces, chosen by what the server offers (see :func:`.task_calls.surface_of`):

* **v2**, the extension ``io.modelcontextprotocol/tasks`` (SEP-2663): the client declares the
  extension; the *server* decides whether a ``tools/call`` becomes a task and answers with a
  flat ``CreateTaskResult`` (``resultType: "task"``). ``tasks/get`` carries the result, the
  error or the questions (``inputRequests``) inline; ``tasks/update`` answers the questions,
  ``tasks/cancel`` stops it.
* **v1**, the frozen 2025-11-25 surface: the *client* asks for a task with ``params.task``
  (for a tool whose ``execution.taskSupport`` says so), gets ``{task: {...}}`` back, polls
  ``tasks/get`` and fetches the outcome with ``tasks/result``, which blocks until the task
  is terminal and is also the channel the server's questions (elicitation, sampling) travel
  on; those are ordinary server requests, answered by the client's handlers as always.

Everything here waits on a deadline. Polling starts quick (:data:`FIRST_POLL_DELAY`) and
doubles until it reaches the server's ``pollIntervalMs`` / ``pollInterval`` (clamped to
:data:`MIN_POLL_INTERVAL` .. :data:`MAX_POLL_INTERVAL`), or :data:`MAX_BACKOFF_DELAY`
without a hint; a status notification for the task (v1 on the session, v2 on a listen
stream, see :meth:`TaskHandle.subscribe`) cuts a wait short.

Around the handle: :mod:`.task_support` (the client-wide watchers and tool map),
:mod:`.task_inputs` (a v2 task's questions, a collaborator each handle owns) and
:mod:`.task_calls` (which surface a server speaks, whether a ``tools/call`` answer created
a task, and how a Client starts, follows and re-attaches tasks).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from ..codec import from_wire
from ..errors import (
    INVALID_PARAMS,
    MCPError,
    ProtocolStateError,
    RequestCancelledError,
    RequestTimeoutError,
)
from ..types import CallToolResult
from .task_inputs import Answer, Request, TaskInputs
from .task_support import ToolTaskSupport, Watchers

if TYPE_CHECKING:
    from .listen import Subscription

#: The statuses a task never leaves (the spec's terminal statuses, both surfaces).
TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
#: The ``_meta`` key v1 puts on messages that belong to a task.
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

#: The server's poll hint is honoured within these bounds (seconds): a hint of 0 does not
#: make the client spin, a hint of a day does not make it sleep past its own deadline
#: unnoticed (every sleep is also cut at the deadline).
MIN_POLL_INTERVAL: Final = 0.01
MAX_POLL_INTERVAL: Final = 60.0
#: The first re-poll comes after this many seconds, then twice as long each time up to the
#: server's hint (or, without one, up to :data:`MAX_BACKOFF_DELAY`).
FIRST_POLL_DELAY: Final = 0.05
MAX_BACKOFF_DELAY: Final = 2.0
#: Seconds a best-effort ``tasks/cancel`` (after a timeout or Ctrl-C) may take.
CANCEL_TIMEOUT: Final = 5.0

#: Which task surface a server speaks (:func:`~.task_calls.surface_of`).
Surface = Literal["v1", "v2"]
StatusCallback = Callable[["TaskState"], None]
#: ``listen(task_id, timeout)``: open a ``subscriptions/listen`` following one task.
Listen = Callable[[str, float], "Subscription"]


class TaskCancelledError(RequestCancelledError):
    """The task ended ``cancelled`` (by :meth:`TaskHandle.cancel`, another client or the
    server); there is no result."""

    def __init__(self, message: str, state: TaskState | None = None) -> None:
        super().__init__(message)
        self.state = state


@dataclass(frozen=True)
class TaskState:
    """A task as the server last described it (either surface, one shape).

    ``result`` / ``error`` / ``input_requests`` are filled only by v2, which inlines them;
    v1 fetches the outcome with ``tasks/result``. ``raw`` is the wire object as received.
    """

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    #: How long the server keeps the task after creation (ms); None: no limit stated.
    ttl_ms: int | None = None
    #: The server's suggested polling interval (ms), if any.
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def terminal(self) -> bool:
        """True once the task is ``completed``, ``failed`` or ``cancelled`` (final)."""
        return self.status in TERMINAL_STATUSES

    @classmethod
    def from_wire(cls, raw: Any, surface: Surface) -> TaskState:
        """Parse a ``Task`` (v1) or ``DetailedTask`` / ``CreateTaskResult`` (v2)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("taskId"), str) or (
                not isinstance(raw.get("status"), str)):
            raise ProtocolStateError(f"malformed task from the server: {_short(raw)}")
        ttl = raw.get("ttlMs" if surface == "v2" else "ttl")
        poll = raw.get("pollIntervalMs" if surface == "v2" else "pollInterval")
        message = raw.get("statusMessage")
        return cls(
            task_id=raw["taskId"], status=raw["status"],
            status_message=message if isinstance(message, str) else None,
            created_at=_str_or_none(raw.get("createdAt")),
            last_updated_at=_str_or_none(raw.get("lastUpdatedAt")),
            ttl_ms=_int_or_none(ttl), poll_interval_ms=_int_or_none(poll),
            result=_dict_or_none(raw.get("result")), error=_dict_or_none(raw.get("error")),
            input_requests=_dict_or_none(raw.get("inputRequests")), raw=raw)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class TaskPorts:
    """What a :class:`TaskHandle` needs from its Client (so this module never imports it)."""

    surface: Surface
    request: Request
    answer: Answer
    watchers: Watchers
    #: The client's default deadline (seconds) for a wait given no ``timeout``.
    request_timeout: float
    #: Opens a listen stream for a task (2026-07-28 only; None otherwise).
    listen: Listen | None = None


class TaskHandle:
    """A task on the server: poll it, wait for it, answer it, cancel it.

    Made by :meth:`Client.start_task <mcpsync.Client.start_task>` or re-attached by id with
    :meth:`Client.task <mcpsync.Client.task>` (from any client of the same server, even in
    another process: only the id is needed). Thread-safe: any number of threads may call
    its methods at once. ``timeout=None`` means the client's default ``timeout``.

    A v2 server may answer a ``tools/call`` at once instead of creating a task; the handle
    then has ``id`` None and already holds the result.
    """

    def __init__(self, ports: TaskPorts, state: TaskState | None, *,
                 task_id: str | None = None, result: CallToolResult | None = None) -> None:
        self._ports = ports
        self._lock = threading.Lock()
        self._state = state
        #: The server's task id (None for a call the server answered without a task).
        self.id: str | None = (state.task_id or None) if state is not None else task_id
        self._outcome: CallToolResult | BaseException | None = result
        #: The v2 questions: which were answered, and answering more.
        self._inputs = TaskInputs(self.id, ports.request, ports.answer)

    # -- reading ---------------------------------------------------------------------

    @property
    def surface(self) -> Surface:
        """``"v1"`` (2025-11-25) or ``"v2"`` (the extension)."""
        return self._ports.surface

    @property
    def last_state(self) -> TaskState | None:
        """The state seen last, without asking the server (None before the first look)."""
        with self._lock:
            return self._state

    def status(self, *, timeout: float | None = None) -> TaskState:
        """Ask the server now (``tasks/get``) and return the task's state."""
        if self.id is None:
            assert self._state is not None
            return self._state
        raw = self._ports.request("tasks/get", {"taskId": self.id}, self._timeout(timeout))
        state = TaskState.from_wire(raw, self.surface)
        with self._lock:
            self._state = state
        return state

    # -- waiting ---------------------------------------------------------------------

    def wait(self, *, timeout: float | None = None,
             on_status: StatusCallback | None = None) -> TaskState:
        """Block until the task is terminal and return its final state.

        ``on_status(state)`` runs on this thread for the first state seen and for every
        change of status or status message. v2 questions are answered with the client's
        handlers as they appear (v1 questions travel on ``tasks/result``, which this
        calls once the task needs input). Raises
        :class:`~mcpsync.errors.RequestTimeoutError` when ``timeout`` passes first (the
        task goes on: call again, or :meth:`cancel`).
        """
        deadline = time.monotonic() + self._timeout(timeout)
        seen: list[tuple[str, str | None]] = []
        state = self._follow(deadline, on_status, seen, refresh=False)
        if state.terminal:
            return state
        # v1 and input_required: the questions arrive while tasks/result is pending.
        self._v1_result(deadline)
        return self._follow(deadline, on_status, seen, refresh=True)

    def result(self, *, timeout: float | None = None) -> CallToolResult:
        """Wait for the task and return the tool's result, as ``call_tool`` would.

        A tool that reported an error is a result with ``is_error`` true; a task that
        ``failed`` raises :class:`~mcpsync.errors.MCPError` with the task's error (v1: what
        ``tasks/result`` answered); a cancelled one raises :class:`TaskCancelledError`.
        Raises :class:`~mcpsync.errors.RequestTimeoutError` when ``timeout`` passes first;
        the task goes on (it is *not* cancelled: that is :meth:`cancel`'s job).
        """
        with self._lock:
            outcome = self._outcome
        if outcome is None:
            deadline = time.monotonic() + self._timeout(timeout)
            state = self._follow(deadline, None, [], refresh=False)
            outcome = self._v1_result(deadline) if self.surface == "v1" else _v2_outcome(state)
            with self._lock:
                self._outcome = outcome
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def cancel(self, *, timeout: float | None = None) -> None:
        """Ask the server to cancel the task (``tasks/cancel``). Cancelling a task that is
        already terminal changes nothing and is not an error."""
        if self.id is None:
            return
        try:
            raw = self._ports.request("tasks/cancel", {"taskId": self.id},
                                      self._timeout(timeout))
        except MCPError as exc:
            # v1 servers refuse to cancel a terminal task (-32602); that is no failure here.
            if exc.code != INVALID_PARAMS or not self.status(timeout=timeout).terminal:
                raise
            return
        if self.surface == "v1" and isinstance(raw.get("taskId"), str):
            with self._lock:
                self._state = TaskState.from_wire(raw, "v1")

    def subscribe(self, *, timeout: float | None = None) -> Subscription:
        """Follow this v2 task's status changes as they happen: a ``subscriptions/listen``
        for this task (2026-07-28). Iterate it for ``notifications/tasks`` notes; while it
        is open, :meth:`wait` and :meth:`result` also wake on them instead of waiting out
        the poll interval. Close it (or use ``with``) when done. Raises
        :class:`~mcpsync.errors.ProtocolStateError` where there is no such stream (v1,
        the handshake era); the server's error when it refuses the listen."""
        if self._ports.listen is None or self.surface != "v2" or self.id is None:
            raise ProtocolStateError("task status notifications need a v2 task over "
                                     "2026-07-28 (subscriptions/listen)")
        return self._ports.listen(self.id, self._timeout(timeout))

    def respond(self, responses: Mapping[str, Any], *, timeout: float | None = None) -> None:
        """Answer v2 ``inputRequests`` by hand (``tasks/update``): key -> an
        ``ElicitResult``, ``CreateMessageResult``, ``{"roots": [...]}`` or a wire dict."""
        if self.surface != "v2":
            raise ProtocolStateError("v1 tasks take their answers as ordinary requests")
        self._inputs.respond(responses, self._timeout(timeout))

    # -- internals -------------------------------------------------------------------

    def _timeout(self, timeout: float | None) -> float:
        return self._ports.request_timeout if timeout is None else timeout

    def _follow(self, deadline: float, on_status: StatusCallback | None,
                seen: list[tuple[str, str | None]], *, refresh: bool) -> TaskState:
        """Poll until terminal (or, in v1, until the task needs input). ``seen`` holds the
        last (status, message) handed to ``on_status``, across calls."""
        state = self.last_state
        if state is None or (refresh and not state.terminal):
            state = self.status(timeout=_remaining(deadline, self.id))
        delay = FIRST_POLL_DELAY
        with self._ports.watchers.watch(self.id or "") as woken:
            while True:
                now = (state.status, state.status_message)
                if on_status is not None and (not seen or seen[-1] != now):
                    seen[:] = [now]
                    on_status(state)
                if state.terminal:
                    return state
                if state.status == "input_required":
                    if self.surface == "v1":
                        return state
                    self._inputs.answer(state.input_requests or {},
                                        lambda: _remaining(deadline, self.id))
                pause, delay = _next_pause(state.poll_interval_ms, delay)
                woken.wait(min(pause, _remaining(deadline, self.id)))
                woken.clear()
                state = self.status(timeout=_remaining(deadline, self.id))

    def _v1_result(self, deadline: float) -> CallToolResult | BaseException:
        """``tasks/result``: blocks until terminal; the server's questions flow meanwhile."""
        state = self.last_state
        if state is not None and state.status == "cancelled":
            return TaskCancelledError(f"task {self.id} was cancelled", state)
        try:
            raw = self._ports.request("tasks/result", {"taskId": self.id},
                                      _remaining(deadline, self.id))
        except MCPError as exc:
            return exc
        result = from_wire(CallToolResult, raw)
        with self._lock:
            self._outcome = result
        return result

    def __repr__(self) -> str:
        state = self.last_state
        status = state.status if state is not None else "unknown"
        return f"<TaskHandle {self.id!r} {self.surface} status={status!r}>"


def _v2_outcome(state: TaskState) -> CallToolResult | BaseException:
    if state.status == "completed":
        if state.result is None:
            return ProtocolStateError(f"task {state.task_id} completed without a result")
        return from_wire(CallToolResult, state.result)
    if state.status == "failed":
        error = MCPError.from_wire(state.error or {"code": -32603, "message": (
            state.status_message or "the task failed (no error given)")})
        return error
    return TaskCancelledError(f"task {state.task_id} was cancelled"
                              + (f": {state.status_message}" if state.status_message else ""),
                              state)


def _remaining(deadline: float, task_id: str | None) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise RequestTimeoutError(f"task {task_id} did not finish in time (it goes on "
                                  "on the server unless cancelled)")
    return left


def _next_pause(hint_ms: int | None, backoff: float) -> tuple[float, float]:
    """(this pause, the next backoff). The pause starts at :data:`FIRST_POLL_DELAY` and
    doubles up to the server's hint (clamped), which it then keeps; without a hint, up to
    :data:`MAX_BACKOFF_DELAY`. So a task that ends at once is seen at once, and a long one
    is polled at the pace the server asked for after a few early looks."""
    cap = MAX_BACKOFF_DELAY if hint_ms is None else min(
        MAX_POLL_INTERVAL, max(MIN_POLL_INTERVAL, hint_ms / 1000.0))
    return min(backoff, cap), min(max(cap, FIRST_POLL_DELAY), backoff * 2)


def run_to_result(handle: TaskHandle, timeout: float) -> CallToolResult:
    """The transparent path of ``call_tool``: wait for the task's result; when this gives up
    (``timeout``, Ctrl-C, an input it cannot answer, a lost connection), cancel the task on
    the server first (best effort, bounded by :data:`CANCEL_TIMEOUT`), then re-raise."""
    try:
        return handle.result(timeout=timeout)
    except BaseException:
        state = handle.last_state
        if state is None or not state.terminal:  # a terminal task has nothing to cancel
            try:
                handle.cancel(timeout=CANCEL_TIMEOUT)
            except Exception:  # the original failure is what the caller needs
                pass
        raise


__all__ = [
    "TERMINAL_STATUSES",
    "Listen",
    "Surface",
    "TaskCancelledError",
    "TaskHandle",
    "TaskPorts",
    "TaskState",
    "ToolTaskSupport",
    "Watchers",
    "run_to_result",
]
