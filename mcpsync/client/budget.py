"""One time budget for a client operation made of several requests.

``client.list_tools(timeout=10)`` may follow ``nextCursor`` through many pages, and
connecting may probe with ``server/discover``, retry it, then shake hands and set the log
level. Each of those requests used to get the whole ``timeout`` again, so one operation could
wait a multiple of what its caller allowed. Here the operation makes one
:class:`~mcpsync.protocol.deadline.Deadline` and each request takes what is left of it
(:func:`left`); when nothing is left the operation fails with the same
:class:`~mcpsync.errors.RequestTimeoutError` a single request would.
"""

from __future__ import annotations

from ..errors import RequestTimeoutError
from ..protocol.deadline import Deadline


def budget(timeout: float | None, default: float | None, what: str) -> Deadline:
    """The deadline of an operation given ``timeout=`` (``None``: the client's ``default``)."""
    return Deadline(default if timeout is None else timeout, what)


def left(deadline: Deadline, cap: float | None = None) -> float | None:
    """The ``timeout=`` for the operation's next request: what is left of ``deadline``
    (at most ``cap``; ``None`` for a deadline that never ends and no cap). Raises
    :class:`RequestTimeoutError` once nothing is left."""
    if deadline.expired():
        raise RequestTimeoutError(f"{deadline.what}: its time budget of "
                                  f"{deadline.budget:g} s ran out")
    return deadline.cap(cap)


__all__ = ["budget", "left"]
