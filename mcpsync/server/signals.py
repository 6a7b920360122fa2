"""SIGINT and SIGTERM for a blocking server loop: :class:`StopSignals`, the one way
``run_stdio`` and ``mcpsync serve`` stop.

Python turns SIGINT into ``KeyboardInterrupt`` but leaves SIGTERM at the system's default,
which kills the process on the spot: ``docker stop`` and systemd (which send SIGTERM) would
never see the server's shutdown. And a ``KeyboardInterrupt`` can land anywhere, the
shutdown included, cutting it short or escaping with a traceback. So a signal raises only
while *armed*, inside :meth:`StopSignals.run`, which catches it; anywhere else it is only
noted (``pending``), and the next :meth:`~StopSignals.run` stops at once. Handlers are
installed only on the main thread (Python allows no other); elsewhere the embedding
program owns its signals.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Collection
from types import FrameType, TracebackType

__all__ = ["StopSignals"]


class _Stop(Exception):
    """Raised in the main thread by :class:`StopSignals`, only where it is caught."""


class StopSignals:
    """SIGINT and SIGTERM handlers between :meth:`install` and :meth:`restore` (or inside
    ``with``). ``honour_ignored``: the signals that a parent which made us ignore them
    (``nohup``, a host that ignores Ctrl-C for its children) keeps ignored. Used by the
    main thread only."""

    def __init__(self, *, honour_ignored: Collection[int] = (signal.SIGINT, signal.SIGTERM),
                 ) -> None:
        self.honour_ignored = frozenset(honour_ignored)
        #: Inside :meth:`run`: a signal raises there (and is caught).
        self.armed = False
        #: A signal came while not armed: the next :meth:`run` stops at once.
        self.pending = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signum in self.honour_ignored and signal.getsignal(signum) is signal.SIG_IGN:
                continue
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:  # None: not installed from Python; nothing to put back
                signal.signal(signum, previous)  # type: ignore[arg-type]  # signal() gave it
        self._previous.clear()

    def __enter__(self) -> StopSignals:
        self.install()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.restore()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.pending = True
        if self.armed:
            self.armed = False
            raise _Stop()

    def run(self, step: Callable[[], object]) -> bool:
        """Run ``step()`` until it returns or a signal (now, or one noted before) cuts it
        short: then False. ``KeyboardInterrupt`` (a SIGINT that came while no handler of
        ours was installed) counts as one."""
        try:
            self.armed = True
            if self.pending:
                raise _Stop()
            step()
            self.armed = False
            return True
        except (_Stop, KeyboardInterrupt):
            self.armed = False
            return False
