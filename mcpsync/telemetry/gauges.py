"""What only a thread-based server can tell: how busy its threads are, as observable gauges.

Sources register here whenever they are made (a connection's own handler pool, an HTTP
app's pool, a server's session table, a task runner), telemetry or not: registering costs
one weak reference. The gauges are created with the meter, when an SDK is configured, and
read their sources only when the SDK collects. Sources are held weakly: a closed pool or a
dropped server simply stops being counted. Thread-safe (one lock around the source sets,
never held while a source is read).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol


class Pool(Protocol):
    """What a handler pool reports (``threads.pool.WorkerPool``)."""

    def load(self) -> tuple[int, int, int]:
        """``(busy threads, queued jobs, thread limit)``."""
        ...


#: name suffix -> (unit, description); the full name is ``mcpsync.{side}.{suffix}``.
GAUGES: dict[str, tuple[str, str]] = {
    "handlers.busy": ("{thread}", "Handler threads running a request or notification now."),
    "handlers.limit": ("{thread}", "The cap on handler threads (max_handlers)."),
    "requests.queued": ("{request}", "Requests waiting for a handler thread."),
    "sessions.open": ("{session}", "Handshake-era sessions open now."),
    "tasks.running": ("{task}", "Tasks running on this process's task threads."),
    "sse_streams.open": ("{stream}", "SSE responses this process's HTTP apps are "
                                     "streaming now."),
}


class Gauges:
    """The sources of one side's gauges."""

    def __init__(self, side: str) -> None:
        self._side = side
        self._lock = threading.Lock()
        self._pools: weakref.WeakSet[Any] = weakref.WeakSet()
        self._counts: dict[str, list[Callable[[], int | None]]] = {}
        #: (suffix, id(owner)) of the sources tracked once (see :meth:`track`).
        self._once: set[tuple[str, int]] = set()

    def track_pool(self, pool: Pool) -> None:
        with self._lock:
            self._pools.add(pool)

    def track(self, suffix: str, owner: object, count: Callable[[Any], int], *,
              once: bool = False) -> None:
        """Count ``count(owner)`` under ``mcpsync.{side}.{suffix}``, while ``owner`` lives
        (held weakly). ``once``: ``owner`` is a process-wide source that several parts
        register (every HTTP app of a server, the SSE count): only the first counts, or
        it would be summed once per app."""
        if suffix not in GAUGES:
            raise ValueError(f"unknown gauge {suffix!r}")
        ref = weakref.ref(owner)

        def read() -> int | None:
            alive = ref()
            return None if alive is None else count(alive)

        with self._lock:
            if once:
                if (suffix, id(owner)) in self._once:
                    return
                self._once.add((suffix, id(owner)))
            self._counts.setdefault(suffix, []).append(read)

    def create(self, meter: Any, observation: Callable[[int], Any]) -> None:
        """Make the observable gauges on ``meter`` (once, when the meter is found)."""
        for suffix, (unit, description) in GAUGES.items():
            meter.create_observable_gauge(
                f"mcpsync.{self._side}.{suffix}", callbacks=[self._reader(suffix, observation)],
                unit=unit, description=description)

    def _reader(self, suffix: str,
                observation: Callable[[int], Any]) -> Callable[[Any], Iterable[Any]]:
        def observe(_options: Any) -> Iterable[Any]:
            return [observation(self.value(suffix))]

        return observe

    def value(self, suffix: str) -> int:
        """The gauge's value now: the sum over its live sources."""
        if suffix.startswith(("handlers.", "requests.")):
            with self._lock:
                pools = list(self._pools)
            index = {"handlers.busy": 0, "requests.queued": 1, "handlers.limit": 2}[suffix]
            return sum(pool.load()[index] for pool in pools)
        with self._lock:
            readers = list(self._counts.get(suffix, ()))
        total = 0
        for read in readers:
            value = read()
            if value is not None:
                total += value
        with self._lock:  # forget the sources that are gone
            alive = self._counts.get(suffix, [])
            self._counts[suffix] = [r for r in alive if r() is not None]
        return total
