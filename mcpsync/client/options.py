"""The option objects of ``Client(...)``: what few clients change, grouped by concern.

Why groups: the constructor took 24 keywords. The ones most callers pass (``timeout``,
``protocol_version``, ``on_log``, ``log_level``, ``on_notification``, ``cache``...) stay
keywords; the rest live in three frozen objects the docs name: :class:`HostHandlers`
(what the application answers for the server: elicitation, sampling, roots, custom
methods, docs/client.md "Serving the server"), :class:`ClientLimits` (the bounds of
docs/limits.md) and :class:`ClientMiddleware`. Frozen, so one value can be shared by
every client an application makes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.connection import (
    DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
    DEFAULT_MAX_QUEUED_NOTIFICATIONS,
    Middleware,
)
from .host import ClientMethodHandler, ClientNotificationHandler
from .inbound import ElicitationHandler, RootsSource, SamplingHandler


@dataclass(frozen=True)
class HostHandlers:
    """What the application answers for when its server asks; the capabilities the
    client declares at ``initialize`` are derived from it.

    ``elicitation``: ``fn(params)`` or ``fn(params, request)`` answering
    ``elicitation/create``; ``sampling``: the same for ``sampling/createMessage``, with
    ``sampling_tools=True`` to accept requests that carry tools; ``roots``: a list of
    ``Root`` or a callable returning one, answering ``roots/list``. ``input_mode``: who
    answers a 2026-07-28 server's questions, these handlers (``"auto"``) or the caller,
    through :class:`~mcpsync.client.InputRequiredError` (``"manual"``; a call may say
    otherwise). ``extra_capabilities``: declared on top of what the handlers serve (what
    you answer by hand). ``methods`` (method -> ``fn(request, params)``) and
    ``notifications`` (method -> ``fn(params)`` or a list of them): custom server
    requests and notifications, as registered later by ``client.method_handler`` and
    ``client.notification_handler``.
    """

    elicitation: ElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    sampling_tools: bool = False
    roots: RootsSource | None = None
    input_mode: str = "auto"
    extra_capabilities: Mapping[str, Any] | None = None
    methods: Mapping[str, ClientMethodHandler] | None = None
    notifications: Mapping[
        str, ClientNotificationHandler | Sequence[ClientNotificationHandler]] | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """``Client(limits=ClientLimits(retry=RetryPolicy()))``: try an idempotent call again
    when it failed for a reason that may pass: the server's rate or concurrency limit
    (-32029; its ``retryAfter`` is waited out), a transport failure (a refused or
    broken connection, a silent peer) or a balancer's 502, 503 or 504 without a JSON-RPC
    error in it (the instance behind it restarting).

    Idempotent means reads and lists (``resources/read``, ``prompts/get``, every
    ``*/list``, ``completion/complete``, ``ping``) and ``tools/call`` of a tool whose last
    ``list_tools()`` said ``readOnlyHint``; any other ``tools/call`` is never retried (it
    may have run). Every try, pause included, stays within the call's one deadline
    (``timeout=``): a pause that would pass it is not taken, the error is raised.

    ``attempts``: tries in all, the first included. ``backoff``: the first pause before
    jitter (seconds), doubled each time up to ``max_backoff``; each pause is drawn
    uniformly from 0 to that ("full jitter"), so clients refused together do not return
    together; a server's ``retryAfter`` is the floor.
    """

    attempts: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("RetryPolicy: attempts >= 1, backoff and max_backoff >= 0")


@dataclass(frozen=True)
class ClientLimits:
    """How much a client takes on (docs/limits.md).

    ``max_handlers``: threads answering the server's requests (the host handlers); the
    server's :class:`~mcpsync.server.options.ServerLimits` names its cap the same.
    ``max_input_rounds``: 2026-07-28 multi round-trip retries of one call before
    :class:`~mcpsync.errors.ProtocolStateError`. ``max_queued_notifications`` and
    ``max_queued_notification_bytes``: notifications (and progress) waiting for
    ``on_log``/``on_notification``/``on_progress``, by count and by encoded size; past
    either, new ones are dropped with one warning per burst. ``retry``: how idempotent
    calls are tried again (:class:`RetryPolicy`; ``None``, the default: never).
    """

    max_handlers: int = 16
    max_input_rounds: int = 8
    max_queued_notifications: int = DEFAULT_MAX_QUEUED_NOTIFICATIONS
    max_queued_notification_bytes: int = DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES
    retry: RetryPolicy | None = None


@dataclass(frozen=True)
class ClientMiddleware:
    """Functions ``fn(message, next_)`` around every message the client sends (``send``)
    and receives (``recv``), outermost first, as on the server (docs/server.md,
    "Middleware")."""

    send: Sequence[Middleware] = ()
    recv: Sequence[Middleware] = ()

