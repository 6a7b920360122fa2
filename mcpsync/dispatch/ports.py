"""The two ports of a handler's context: where its messages go, and how long it lives.

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
with (``request_ports.py``; ``mcpsync.tasks.ports``). The ports are Protocols here, in
``dispatch/``, so that neither the engine's request nor the tasks extension is imported
for typing: they satisfy them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .inbound import Inbound
from .inbound import RequestFacts as RequestFacts  # where contexts import it
from .outbound import OutboundChannel
from .session_info import SessionInfo


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
