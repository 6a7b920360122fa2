"""One time budget for a whole operation: :class:`Deadline`.

A per-read timeout bounds the silence between two bytes, not the operation: a peer that
sends one byte every half second keeps a ``timeout=3`` read alive for ever, and a request
that makes five calls to a stopped Redis, each allowed 10 s, waits 50 s. mcpsync therefore
makes one :class:`Deadline` where an operation starts (a request enters the WSGI app, a
client call starts, a token is verified) and hands it down; every wait on something outside
the process takes what is left of it (:meth:`Deadline.remaining`, :meth:`Deadline.cap`),
and running out is :class:`DeadlineExceeded`, a ``TimeoutError``.

Where the wait happens inside a library mcpsync does not own (redis-py's socket reads), the
deadline travels as the *ambient* one instead: ``with deadline.applied():`` makes it
:func:`current` for the code that runs in that block on this thread (a ``contextvars``
variable, so it does not leak to other threads or outlive the block).

Thread-safe: a deadline is immutable once made.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from collections.abc import Iterator
from typing import Final

__all__ = ["Deadline", "DeadlineExceeded", "budget_text", "current"]


class DeadlineExceeded(TimeoutError):
    """An operation's time budget ran out. ``what`` names the operation and ``budget``
    says how long it had (seconds; ``None`` when unknown)."""

    def __init__(self, what: str, budget: float | None) -> None:
        self.what = what
        self.budget = budget
        spent = f" of {budget:g} s" if budget is not None else ""
        super().__init__(f"{what}: its time budget{spent} ran out")


_INF: Final = math.inf
_monotonic = time.monotonic


class Deadline:
    """The moment by which an operation must end, on ``time.monotonic()``'s clock.

    ``Deadline(10, "JWKS fetch")`` ends ten seconds from now; ``Deadline(None)`` never ends
    (a wait with it is bounded by its other limits only). :meth:`within` makes a tighter
    one for a part of the operation, so a part never outlives the whole.
    """

    __slots__ = ("at", "budget", "what")

    def __init__(self, seconds: float | None, what: str = "operation", *,
                 at: float | None = None) -> None:
        if at is None:  # every call makes one: kept to plain operations
            at = _INF if seconds is None else _monotonic() + (
                seconds if seconds > 0.0 else 0.0)
        self.at = at
        self.budget = seconds
        self.what = what

    @classmethod
    def never(cls, what: str = "operation") -> Deadline:
        """A deadline that does not end."""
        return cls(None, what)

    def remaining(self) -> float:
        """Seconds left (never negative; ``math.inf`` for a deadline that never ends)."""
        at = self.at
        if at == _INF:
            return _INF
        left = at - _monotonic()
        return left if left > 0.0 else 0.0

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    @property
    def bounded(self) -> bool:
        """Whether the deadline ends at all."""
        return self.at != math.inf

    def cap(self, seconds: float | None) -> float | None:
        """``seconds`` lowered to what is left (``None``, "no limit", becomes what is
        left, or stays ``None`` for a deadline that never ends). For the ``timeout=`` of a
        library call made on the way."""
        left = self.remaining()
        if seconds is None:
            return None if left == math.inf else left
        return min(seconds, left)

    def check(self) -> None:
        """Raise :class:`DeadlineExceeded` if the deadline has passed."""
        if self.expired():
            raise self.exceeded()

    def exceeded(self) -> DeadlineExceeded:
        """The error that says this deadline ran out (to raise from a wait that ended)."""
        return DeadlineExceeded(self.what, self.budget)

    def within(self, seconds: float | None, what: str | None = None) -> Deadline:
        """A deadline for a part of this operation: ``seconds`` from now, or this one's
        end if that comes first."""
        part = Deadline(seconds, what or self.what)
        if part.at <= self.at:
            return part
        return Deadline(self.budget, what or self.what, at=self.at)

    @contextlib.contextmanager
    def applied(self) -> Iterator[Deadline]:
        """Make this the ambient deadline (:func:`current`) for the block, on this thread.
        A deadline already in force that ends sooner stays in force: a block never gets
        more time than the code around it."""
        outer = _CURRENT.get()
        effective = self if outer is None or self.at <= outer.at else outer
        token = _CURRENT.set(effective)
        try:
            yield effective
        finally:
            _CURRENT.reset(token)

    def __repr__(self) -> str:
        left = self.remaining()
        shown = "never" if left == math.inf else f"{left:.3f}s left"
        return f"<Deadline {self.what!r} {shown}>"


def budget_text(seconds: float | None) -> str:
    """A time budget as a message shows it: ``"5 s"``, ``"0.5 s"``, ``"no limit"``;
    rounded to the millisecond (a budget handed down as what was left of a larger one is
    4.999806030000059 seconds, which says nothing more than 5)."""
    if seconds is None or seconds == _INF:
        return "no limit"
    return f"{round(seconds, 3):g} s"


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "mcpsync_deadline", default=None)


def current() -> Deadline | None:
    """The ambient deadline of this thread's current block (see :meth:`Deadline.applied`),
    or ``None`` outside every such block."""
    return _CURRENT.get()
