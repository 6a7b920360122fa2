"""The app's handler pool, which can also run one job on the caller's thread.

A handshake-era session's engine runs in push mode: the POST's thread routes the request,
and the engine hands its handler to the pool, then the POST's thread waits on the response
stream for the answer. For a tool that can neither report progress nor see cancellation
(no context parameter), that hand-off buys nothing and costs two thread switches per call:
the 2026-07-28 path already runs such tools on the request's thread (``modern.py``).
The engine only knows ``pool.submit``, so the POST *arms* the pool around routing that one
request (:meth:`HandOffPool.inline_next`): the next job submitted from this thread runs
right here, once, as a pool thread would run it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..engine.pool import Job, WorkerPool

logger = logging.getLogger("mcpsync.http")


class HandOffPool(WorkerPool):
    """A :class:`~mcpsync.engine.pool.WorkerPool` whose next job from an armed thread
    runs on that thread. Thread-safe: arming is per thread."""

    def __init__(self, max_workers: int, *, name: str, max_backlog: int) -> None:
        super().__init__(max_workers, name=name, max_backlog=max_backlog)
        self._armed = threading.local()

    @contextmanager
    def inline_next(self) -> Iterator[None]:
        """Within the block, the first job this thread submits runs at once, here."""
        self._armed.on = True
        try:
            yield
        finally:
            self._armed.on = False

    def submit(self, job: Job) -> None:
        armed = self._armed
        if getattr(armed, "on", False) and not self._shutdown:  # shut down: refused below
            armed.on = False
            try:
                job()
            except BaseException:  # as a pool thread: never take the caller down with it
                logger.exception("unhandled error in an inline handler on %s",
                                 threading.current_thread().name)
            return
        super().submit(job)
