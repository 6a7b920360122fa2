"""Whether a connection is ending or has ended, and how: :class:`Closing`.

Kept apart from :mod:`.connection` because every part of a connection asks it: a call
refused once the end has begun, a pending call failed by it, a reader thread reporting why
reading stopped. The end begins once (:meth:`Closing.begin`, whoever gets there first:
``close()``, the peer's EOF, a failed read) and is done when the transport is closed and
the connection's threads told to stop (:meth:`Closing.done`).
"""

from __future__ import annotations

import logging
import threading

from ..errors import ConnectionClosedError, ServerExitedError

logger = logging.getLogger("mcpsync.engine")


class Closing:
    """A connection's end, as its parts see it. Thread-safe."""

    __slots__ = ("_closed", "_closing", "_exited", "_lock", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._closing = False
        self._closed = threading.Event()
        #: Set when the transport ended because the server process did: every call that
        #: fails afterwards carries its exit status and stderr tail, not just "closed".
        self._exited: ServerExitedError | None = None

    @property
    def closing(self) -> bool:
        """True once the end has begun (read without the lock: one flag)."""
        return self._closing

    @property
    def closed(self) -> bool:
        """True once the end is done."""
        return self._closed.is_set()

    def begin(self) -> bool:
        """Begin the end; True for the one caller that does, False for every later one."""
        with self._lock:
            if self._closing:
                return False
            self._closing = True
            return True

    def done(self) -> None:
        """The end is done: wake whoever waits for it."""
        self._closed.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the end is done; False on timeout."""
        return self._closed.wait(timeout)

    def error(self, what: str, *, suffix: bool = True) -> ConnectionClosedError:
        """A fresh error for a call that can not complete: ``what: connection closed``, or
        (when the server process ended) ``what: <how it ended>`` with its details."""
        exited = self._exited
        if exited is None:
            return ConnectionClosedError(f"{what}: connection closed" if suffix else what)
        return exited.retitled(f"{what}: {exited.reason}" if suffix else what)

    def receive_failed(self, exc: Exception) -> str:
        """Why reading ended, for whichever thread was reading: the server process's end
        (kept, so every failed call says how it ended), or the transport's error."""
        if isinstance(exc, ServerExitedError):
            self._exited = exc
            return exc.reason
        if isinstance(exc, ConnectionClosedError):
            # The transport ended and says why (a stdio peer that stopped reading).
            if not self._closing:
                logger.warning("%s: connection ended: %s", self._name, exc)
            return str(exc)
        if not self._closing:
            logger.warning("%s: receive failed: %s", self._name, exc)
        return f"receive failed: {exc}"
