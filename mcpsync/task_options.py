"""``TaskOptions``: the bounds of the tasks a :class:`mcpsync.Server` runs.

Beside ``Server(task_store=...)`` (where tasks live) these say how many run at once in
this process, how long their records are kept and how often clients are told to poll
(docs/tasks.md, docs/limits.md). They are the options of the tasks extension
(:class:`~mcpsync.tasks.Tasks`) that ``Server`` uses from its construction, grouped so
that the constructor keeps one keyword for them next to ``task_store``. This module
stands beside ``facade.py`` (not in ``mcpsync.tasks``) because it is the server's
option object, not part of how tasks run. Frozen: share one value between servers.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tasks.bounds import DEFAULT_TTL_MS


@dataclass(frozen=True)
class TaskOptions:
    """``max_running``: tasks running at once in this process (each one thread; past it a
    task-augmented ``tools/call`` is refused at once). ``ttl_ms``: how long a task is
    kept after its creation (a client's v1 ``ttl`` is lowered to it; every store clamps
    it to 1 s .. 24 h). ``poll_interval_ms``: the ``pollIntervalMs`` suggested to
    clients."""

    max_running: int = 64
    ttl_ms: int | None = DEFAULT_TTL_MS
    poll_interval_ms: int = 500

