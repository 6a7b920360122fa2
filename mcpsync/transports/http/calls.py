"""The HTTP exchanges the client transport's threads are making, by call: so that a call
given up on (timed out, cancelled, interrupted), or the transport's close, ends its
exchange at once instead of leaving its thread blocked until the server answers.

Each exchange is :func:`~mcpsync.transports.http.deadline.exchange`'s: it ends by its
deadline on its own (the process's watchdog shuts its socket down), and :meth:`end` ends it
sooner from any thread. A connection ended so is never reused: the thread that made the
exchange closes it as it gives it back to the pool (only that thread gives it back).
Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

from ...protocol.deadline import Deadline
from .deadline import Exchange, ExchangeScope, exchange

__all__ = ["CallExchanges"]


class CallExchanges:
    """Running exchanges by key: a request id, or a key of the transport's own (a
    notification's delivery, a re-initialize) that only :meth:`end_all` ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Hashable, Exchange] = {}
        self._waking: dict[Hashable, threading.Event] = {}  # keys in pause()
        self._closed: str | None = None

    def running(self, key: Hashable, deadline: Deadline, *,
                watch: bool = True) -> _Running:
        """Run the block's HTTP requests (on this thread) as ``key``'s exchange, ended by
        ``deadline``, by :meth:`end` of ``key``, or by :meth:`end_all`. ``watch=False``
        when the caller waiting for ``key`` ends it at ``deadline`` itself (see
        :func:`~mcpsync.transports.http.deadline.exchange`)."""
        return _Running(self, key, exchange(deadline, watch=watch))

    def over(self, key: Hashable) -> bool:
        """Whether ``key``'s exchange was ended or its deadline has passed: its caller
        waits no more (it reports the timeout itself), so the exchange reports nothing."""
        with self._lock:
            current = self._running.get(key)
        return current is not None and (current.ended is not None
                                        or current.deadline.expired())

    def pause(self, key: Hashable, seconds: float) -> bool:
        """Wait ``seconds`` (between two attempts of ``key``'s exchange) unless it is ended
        first: True when it was (or is not running), False when the time passed."""
        with self._lock:
            current = self._running.get(key)
            if current is None or current.ended is not None or self._closed is not None:
                return True
            woken = self._waking[key] = threading.Event()
        try:
            return woken.wait(seconds)
        finally:
            with self._lock:
                self._waking.pop(key, None)

    def end(self, key: Hashable, why: str) -> bool:
        """End ``key``'s exchange now (its blocked thread returns with an error); False when
        none is running."""
        with self._lock:
            current = self._running.get(key)
            if current is None:
                return False
            # Under the lock (a flag and a socket shutdown, neither blocks), so that
            # pause() either sees it ended or is woken below.
            current.end(why)
            woken = self._waking.get(key)
        if woken is not None:
            woken.set()
        return True

    def end_all(self, why: str) -> None:
        """End every running exchange, and every one started from now on (the transport
        is closing)."""
        with self._lock:
            self._closed = why
            running = list(self._running.values())
            waking = list(self._waking.values())
        for current in running:
            current.end(why)
        for woken in waking:
            woken.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._running)


class _Running:
    """What :meth:`CallExchanges.running` returns (a plain context manager: one per call)."""

    __slots__ = ("_current", "_key", "_owner", "_scope")

    def __init__(self, owner: CallExchanges, key: Hashable, scope: ExchangeScope) -> None:
        self._owner = owner
        self._key = key
        self._scope = scope

    def __enter__(self) -> Exchange:
        current = self._current = self._scope.__enter__()
        owner = self._owner
        with owner._lock:
            owner._running[self._key] = current
            closed = owner._closed
        if closed is not None:
            current.end(closed)
        return current

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: object) -> None:
        owner = self._owner
        with owner._lock:
            if owner._running.get(self._key) is self._current:
                del owner._running[self._key]
        self._scope.__exit__(kind, exc, traceback)
