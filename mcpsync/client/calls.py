"""The request path of a :class:`~mcpsync.Client`: how each API call is sent and answered.

Every typed method (``call_tool``, ``read_resource``, ``list_tools``…) and the raw
``request`` go through :meth:`Calls.send`: the 2026-07-28 envelope, the response cache
(``ttlMs`` hints), the conversion of the result, and multi round-trip ``input_required``
results followed to the end. :meth:`Calls.all_pages` walks a paginated list. ``Calls``
never sees the ``Client``, which composes it, nor the :class:`~.negotiate.Negotiation`
beyond its envelope (:class:`EnvelopeSource`), so the handshake can import this module's
time budget.

**One time budget per operation.** ``client.list_tools(timeout=10)`` may follow
``nextCursor`` through many pages, and connecting may probe with ``server/discover``, retry
it, then shake hands and set the log level. Each of those requests used to get the whole
``timeout`` again, so one operation could wait a multiple of what its caller allowed. Here
the operation makes one :class:`~mcpsync.protocol.deadline.Deadline` (:func:`budget`) and
each request takes what is left of it (:func:`left`); when nothing is left the operation
fails with the same :class:`~mcpsync.errors.RequestTimeoutError` a single request would.

**Multi round-trip requests** (2026-07-28). A ``tools/call``, ``prompts/get`` or
``resources/read`` may be answered with an ``InputRequiredResult``: questions
(``inputRequests``, any number per round) and an opaque ``requestState``. The client
retries the same request with a new id, ``inputResponses`` for every question and the
state echoed verbatim, until the result is ``complete`` (:func:`resolve`).

* ``input_mode="auto"`` (the default): the client's host handlers answer every question
  of every round, at most ``max_input_rounds`` retries.
* ``input_mode="manual"``: the call raises :class:`InputRequiredError`; the caller answers
  the questions however it likes and calls :meth:`InputRequiredError.retry`, which
  returns what the original call would have (or raises again for the next round).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ..codec import from_wire, to_wire
from ..display.notebook import progress_bar
from ..engine.connection import Connection
from ..errors import (
    RATE_LIMITED,
    InvalidParamsError,
    MCPError,
    MCPSyncError,
    MessageTooLargeError,
    ProtocolStateError,
    RequestTimeoutError,
    TransportError,
)
from ..protocol.deadline import Deadline, budget_text
from ..types import Progress
from ..types.client_features import CreateMessageRequestParams, ElicitRequestParams
from .cache import ResponseCache, cache_key
from .options import RetryPolicy

ProgressHandler = Callable[[Progress], None]
#: Answers one 2026-07-28 input request (method, params) with the host's handler.
InputAnswerer = Callable[[str, dict[str, Any]], dict[str, Any]]

#: ``send(params, timeout)``: one multi round-trip retry on the wire, the raw result back.
Send = Callable[[dict[str, Any], "float | None"], dict[str, Any]]

INPUT_MODES: Final = ("auto", "manual")

logger = logging.getLogger("mcpsync.client")

_MAX_PAGES = 10_000
#: How many read-only tool names a client remembers for retries (bounded, docs/limits.md).
_MAX_KNOWN_TOOLS = 10_000
#: Methods that read and change nothing: a retry can not do anything twice.
IDEMPOTENT_METHODS: Final = frozenset({"resources/read", "prompts/get", "completion/complete",
                                       "ping", "server/discover"})
#: A balancer's answer when the server behind it is down or restarting (the HTTP client
#: gives the status of an answer that held no JSON-RPC error as ``data.httpStatus``).
GATEWAY_STATUSES: Final = frozenset({502, 503, 504})


def retry_pause(policy: RetryPolicy, attempt: int, error: BaseException) -> float | None:
    """Seconds to wait before try ``attempt + 1`` after ``error``, or ``None``: do not
    retry (no tries left, or an error that will not pass by waiting)."""
    if attempt >= policy.attempts:
        return None
    if isinstance(error, MCPError):
        data = error.data if isinstance(error.data, dict) else {}
        if error.code != RATE_LIMITED and data.get("httpStatus") not in GATEWAY_STATUSES:
            return None
        floor = data.get("retryAfter")
        floor = float(floor) if isinstance(floor, (int, float)) and floor > 0 else 0.0
    elif isinstance(error, TransportError) and not isinstance(error, MessageTooLargeError):
        floor = 0.0
    else:
        return None
    ceiling = min(policy.max_backoff, policy.backoff * 2 ** (attempt - 1))
    return floor + random.uniform(0.0, ceiling)


@dataclass
class CallOptions:
    """The defaults every call reads at the moment it is made (``Client.timeout`` and
    friends write them). Plain data."""

    #: Default deadline of a call, in seconds.
    timeout: float
    #: "auto": the host's handlers answer input requests; "manual": calls raise
    #: :class:`InputRequiredError`.
    input_mode: str
    #: Bound on 2026-07-28 multi round-trip rounds for one call.
    max_input_rounds: int
    #: Retry of idempotent calls (:class:`~.options.RetryPolicy`); None: never.
    retry: RetryPolicy | None = None


class EnvelopeSource(Protocol):
    """What :class:`Calls` reads of the :class:`~.negotiate.Negotiation`."""

    @property
    def envelope(self) -> dict[str, Any] | None:
        """The per-request ``_meta`` envelope when speaking 2026-07-28, else ``None``."""


class Calls:
    """How one client sends a call and reads its answer. Thread-safe: its only state of
    its own is the set of read-only tools (for retries), replaced whole in one assignment."""

    def __init__(self, connection: Connection, negotiation: EnvelopeSource,
                 cache: ResponseCache | None, options: CallOptions,
                 answer: InputAnswerer) -> None:
        self._connection = connection
        self._negotiation = negotiation
        self._cache = cache
        self._options = options
        self._answer = answer
        self._read_only: frozenset[str] = frozenset()

    def send(self, method: str, params: dict[str, Any] | None, timeout: float | None,
             on_progress: ProgressHandler | str | None, input_mode: str | None,
             use_cache: bool, convert: Callable[[dict[str, Any]], Any]) -> Any:
        """One call as every API method makes it: the 2026-07-28 envelope added to
        ``_meta``, a fresh cached result returned without asking, the answer converted,
        and ``input_required`` results followed (answered by the host handlers in "auto"
        mode)."""
        options = self._options
        mode = options.input_mode if input_mode is None else input_mode
        if mode not in INPUT_MODES:
            raise ValueError(f"input_mode {mode!r} is not one of {INPUT_MODES}")
        if isinstance(on_progress, str):
            if on_progress != "bar":
                raise ValueError(f"on_progress {on_progress!r}: a callable or 'bar'")
            name = (params or {}).get("name")
            bar = progress_bar(name if isinstance(name, str) else method)
            try:
                # Every progress notification is handed over before the call returns, so
                # the bar is complete when it is closed.
                return self.send(method, params, timeout, bar, input_mode, use_cache, convert)
            finally:
                bar.close()
        progress = _progress_adapter(on_progress) if on_progress is not None else None
        params = dict(params or {})
        envelope = self._negotiation.envelope
        if envelope is not None:
            params["_meta"] = {**envelope, **(params.get("_meta") or {})}
        cache = self._cache if use_cache else None
        key = cache_key(method, params) if cache is not None else None
        generation = 0
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                return convert(hit)
            generation = cache.generation()
        deadline = budget(timeout, options.timeout, method)  # every round shares it
        connection = self._connection
        try:
            result = self._first(method, params, timeout, progress, deadline)
        except InvalidParamsError:
            if cache is not None and key is not None and key[1] is not None and (
                    method.endswith("/list")):
                cache.invalidate(method)  # an invalid cursor: every page is suspect
            raise
        if cache is not None and key is not None:
            cache.store(key, result, generation)  # never an MRTR retry: those are not keyed

        def send(retry: dict[str, Any], retry_timeout: float | None) -> dict[str, Any]:
            return connection.request(
                method, retry, timeout=timeout if retry_timeout is None else retry_timeout,
                on_progress=progress, follows_previous=True)

        return resolve(method, params, result, send=send,
                       answer=self._answer if mode == "auto" else None,
                       max_rounds=options.max_input_rounds, convert=convert,
                       deadline=deadline)

    def _first(self, method: str, params: dict[str, Any], timeout: float | None,
               progress: Callable[[dict[str, Any]], None] | None,
               deadline: Deadline) -> dict[str, Any]:
        """The call's first request, tried again per the client's :class:`RetryPolicy`
        when it is idempotent (see there), each try and pause within ``deadline``."""
        connection = self._connection
        policy = self._options.retry
        if policy is None or not self._idempotent(method, params):
            return connection.request(method, params or None, timeout=timeout,
                                      on_progress=progress)
        for attempt in range(1, policy.attempts + 1):
            try:
                return connection.request(method, params or None,
                                          timeout=timeout if attempt == 1 else left(deadline),
                                          on_progress=progress)
            except (MCPError, TransportError) as exc:
                pause = retry_pause(policy, attempt, exc)
                if pause is None or pause >= deadline.remaining():
                    raise
                logger.debug("%s: try %d failed (%s); again in %.3f s", method, attempt,
                             exc, pause)
                threading.Event().wait(pause)  # (interruptible: Ctrl-C ends it)
        raise AssertionError("unreachable")  # pragma: no cover (the last try raises)

    def _idempotent(self, method: str, params: dict[str, Any]) -> bool:
        if method == "tools/call":
            return params.get("name") in self._read_only and "task" not in params
        return method in IDEMPOTENT_METHODS or method.endswith("/list")

    def all_pages(self, method: str, key: str, timeout: float | None) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``nextCursor`` (bounded, never in a
        loop). ``timeout`` bounds the whole listing, not each page."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        deadline = budget(timeout, self._options.timeout, method)  # one budget, all pages
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            try:
                result = self.send(method, params, left(deadline), None, None, True, raw)
            except RequestTimeoutError:
                # The page had what was left; the caller gave the listing its budget.
                raise RequestTimeoutError(f"{method} timed out after "
                                          f"{budget_text(deadline.budget)}") from None
            page = result.get(key)
            if not isinstance(page, list):
                raise MCPSyncError(f"{method}: result has no {key!r} list")
            items.extend(page)
            cursor = result.get("nextCursor")
            if cursor is None:
                if method == "tools/list":
                    self._read_only = frozenset(
                        tool["name"] for tool in items[:_MAX_KNOWN_TOOLS]
                        if isinstance(tool, dict) and isinstance(tool.get("name"), str)
                        and isinstance(tool.get("annotations"), dict)
                        and tool["annotations"].get("readOnlyHint") is True)
                return items
            if cursor in seen:
                raise MCPSyncError(f"{method}: the server repeated cursor {cursor!r}")
            seen.add(cursor)
        raise MCPSyncError(f"{method}: more than {_MAX_PAGES} pages")


def raw(result: dict[str, Any]) -> dict[str, Any]:
    return result


def typed(cls: type[Any]) -> Callable[[dict[str, Any]], Any]:
    def convert(result: dict[str, Any]) -> Any:
        return from_wire(cls, result)

    return convert


def _progress_adapter(handler: ProgressHandler) -> Callable[[dict[str, Any]], None]:
    def adapt(params: dict[str, Any]) -> None:
        try:
            progress = from_wire(Progress, params)
        except ValueError:
            logger.warning("malformed progress notification: %r", params)
            return
        handler(progress)

    return adapt


# -- the time budget of an operation ----------------------------------------------------

def budget(timeout: float | None, default: float | None, what: str) -> Deadline:
    """The deadline of an operation given ``timeout=`` (``None``: the client's ``default``)."""
    return Deadline(default if timeout is None else timeout, what)


def left(deadline: Deadline, cap: float | None = None) -> float | None:
    """The ``timeout=`` for the operation's next request: what is left of ``deadline``
    (at most ``cap``; ``None`` for a deadline that never ends and no cap). Raises
    :class:`RequestTimeoutError` once nothing is left."""
    if deadline.expired():
        raise RequestTimeoutError(f"{deadline.what}: its time budget of "
                                  f"{budget_text(deadline.budget)} ran out")
    return deadline.cap(cap)


# -- multi round-trip requests ----------------------------------------------------------

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
            answer: InputAnswerer | None, max_rounds: int, convert: Callable[[dict[str, Any]], Any],
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
        try:
            result = send(_retry_params(params, result, answers),
                          None if deadline is None else left(deadline))
        except RequestTimeoutError:
            if deadline is None:
                raise
            raise RequestTimeoutError(f"{method} timed out after "
                                      f"{budget_text(deadline.budget)}") from None
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


__all__ = ["INPUT_MODES", "CallOptions", "Calls", "EnvelopeSource", "InputRequest",
           "InputRequiredError", "ProgressHandler", "budget", "left", "raw", "resolve",
           "typed"]
