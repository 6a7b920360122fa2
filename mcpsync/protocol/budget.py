"""Time a request may spend waiting on one dependency, in total: :class:`Budget`.

A :class:`~mcpsync.protocol.deadline.Deadline` is a moment on the clock. That is the right
bound for one operation, but not for "the Redis work of a request": between its store
calls a request runs its handler, waits for a pool thread, or streams an answer, and none
of that is Redis's time. A wall-clock deadline made when the request arrived would refuse
the session save that follows a 20-second tool call although Redis answered every call at
once. So the request gets a *budget* of seconds instead, spent only while it waits on the
dependency: each wait takes a :class:`Deadline` of what is left (:meth:`Budget.spend`), and
what it used is charged when it ends. Five store calls to a stopped Redis share the one
budget, so the request is refused within it, whatever its handler did in between.

The budget travels as the ambient one (``with budget.scope():``, read back with
:func:`current_budget`), because the waits happen deep inside the stores, which have no
parameter for it. Like the ambient deadline it is a ``contextvars`` variable: it is the
budget of the code on this thread inside the block. Another thread that works for the
same request while the request waits for it (a handler thread storing the events of the
answer the request is waiting for) joins it explicitly with :meth:`Budget.applied`, and
only until the scope ends (:attr:`Budget.closed`): work done after that, for a stream
that outlives the request, bounds its waits by its own limits.

Thread-safe: the threads sharing a budget charge it under a lock.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from collections.abc import Iterator

from .deadline import Deadline

__all__ = ["Budget", "current_budget"]


class Budget:
    """``seconds`` of waiting on a dependency, spent by the waits made while it is applied.

    ``Budget(None)`` never runs out. ``what`` names what it bounds ("Redis work of this
    request"), for the error that says it ran out.
    """

    __slots__ = ("_token", "closed", "left", "seconds", "what")

    def __init__(self, seconds: float | None, what: str) -> None:
        if seconds is not None and not seconds >= 0:
            raise ValueError("a budget is a number of seconds, not negative")
        self.seconds = seconds
        self.what = what
        #: Seconds not spent yet (``math.inf`` for a budget that never runs out).
        self.left = math.inf if seconds is None else float(seconds)
        #: The scope that made it has ended: other threads no longer join it.
        self.closed = False

    @property
    def spent_out(self) -> bool:
        return self.left <= 0

    def describe(self) -> str:
        """``what`` with the budget's size, for messages."""
        if self.seconds is None:
            return self.what
        return f"{self.what} ({self.seconds:g} s in all)"

    @contextlib.contextmanager
    def spend(self, cap: float | None = None) -> Iterator[Deadline]:
        """One wait: a deadline of what is left (never more than ``cap`` seconds), applied
        as the ambient one for the block; the time the block took is charged when it
        ends, however it ends."""
        seconds = None if self.left == math.inf else self.left
        if cap is not None:
            seconds = cap if seconds is None else min(cap, seconds)
        deadline = Deadline(seconds, self.describe())
        began = time.monotonic()
        try:
            with deadline.applied() as effective:
                yield effective
        finally:
            if self.left != math.inf:
                spent = time.monotonic() - began
                with _CHARGING:
                    self.left = max(0.0, self.left - spent)

    def applied(self) -> _Applied:
        """Make this the budget of the waits made on this thread inside the block."""
        return _Applied(self)

    def lent(self) -> contextlib.AbstractContextManager[object]:
        """:meth:`applied`, for a block on another thread that works for the budget's
        owner (a handler thread storing the events a request waits for): nothing once the
        owner's block has ended (:attr:`closed`), or where the budget is already in force."""
        if self.closed or _CURRENT.get() is self:
            return _NOTHING
        return _Applied(self)

    def scope(self) -> Budget:
        """:meth:`applied` for the block that owns the budget (a request, from its start
        to its answer): when it ends, the budget is :attr:`closed`. The budget is its own
        context manager here, one object per request: the WSGI app opens one for each."""
        return self

    def __enter__(self) -> Budget:
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)
        self.closed = True

    def __repr__(self) -> str:
        left = "unbounded" if self.left == math.inf else f"{self.left:.3f}s left"
        return f"<Budget {self.what!r} {left}>"


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "mcpsync_budget", default=None)
#: Guards the charge of a wait (a budget may be spent from a handler thread as well as its
#: request's): charges are rare, so one lock for every budget, never one per request.
_CHARGING = threading.Lock()
#: One shared no-op context (``nullcontext`` holds no state, so any thread may enter it).
_NOTHING: contextlib.nullcontext[None] = contextlib.nullcontext()


class _Applied:
    """What :meth:`Budget.applied` returns: a plain object, since a producer enters one
    per stored event."""

    __slots__ = ("_budget", "_token")

    def __init__(self, budget: Budget) -> None:
        self._budget = budget

    def __enter__(self) -> Budget:
        self._token = _CURRENT.set(self._budget)
        return self._budget

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def current_budget() -> Budget | None:
    """The budget applied around this thread's current block, or ``None``."""
    return _CURRENT.get()
