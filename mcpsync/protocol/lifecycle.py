"""The handshake-era session lifecycle, as a table.

States move only through :data:`TRANSITIONS`; :func:`admits` says whether a message may be
processed in a state. The table is the whole rule, so it can be read and tested in one place.
"""

from __future__ import annotations

import enum
from typing import Final

from .methods import VIEWS


class State(enum.Enum):
    """Where a handshake-era session is."""

    #: Nothing received yet: only ``initialize`` and ``ping`` are served.
    NEW = "new"
    #: ``initialize`` answered; waiting for ``notifications/initialized``.
    INITIALIZING = "initializing"
    #: Fully operational.
    READY = "ready"
    #: The connection is gone.
    CLOSED = "closed"


class Event(enum.Enum):
    INITIALIZE_ANSWERED = "initialize answered"
    INITIALIZED_RECEIVED = "initialized received"
    CLOSED = "closed"


TRANSITIONS: Final[dict[tuple[State, Event], State]] = {
    (State.NEW, Event.INITIALIZE_ANSWERED): State.INITIALIZING,
    (State.INITIALIZING, Event.INITIALIZED_RECEIVED): State.READY,
    # A second `initialized` is harmless; keep the session.
    (State.READY, Event.INITIALIZED_RECEIVED): State.READY,
    (State.NEW, Event.CLOSED): State.CLOSED,
    (State.INITIALIZING, Event.CLOSED): State.CLOSED,
    (State.READY, Event.CLOSED): State.CLOSED,
    (State.CLOSED, Event.CLOSED): State.CLOSED,
}

#: Methods a server accepts before the handshake has completed.
PRE_INIT_METHODS: Final = VIEWS.before_init


class LifecycleError(Exception):
    """An event that the table does not allow in the current state."""


def advance(state: State, event: Event) -> State:
    """The next state, or :class:`LifecycleError` when the event is not allowed now."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise LifecycleError(f"{event.value} is not allowed while {state.value}") from None


def admits(state: State, method: str) -> bool:
    """Whether a server in ``state`` serves a request for ``method``.

    Requests that follow the ``initialize`` answer are served even before
    ``notifications/initialized`` arrives: clients that pipeline (send the notification and
    the next request back to back) are common, and the order they arrive in over HTTP is
    not guaranteed. A second ``initialize`` is refused.
    """
    if state is State.NEW:
        return method in PRE_INIT_METHODS
    if state is State.CLOSED:
        return False
    return method != "initialize"
