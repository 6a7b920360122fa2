"""Tasks: tool calls that outlive their request (2025-11-25 v1 and the SEP-2663 extension).

A server serves tasks through the extension :class:`Tasks` (every :class:`mcpsync.Server`
uses one: ``server.use(Tasks(...))`` is for a bare ``ServerCore``).

The stores: :class:`MemoryTaskStore` (the default, one process) and :class:`SqliteTaskStore`
(a file shared by threads and processes on one host); their bounds are in :mod:`.bounds`.

The names below are imported on first use (PEP 562): a server imports this package for a
few constants, and must not pay at start-up for the stores and the runner it may never use.
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ..stores.tasks import (
        TERMINAL,
        TaskRecord,
        TaskStatus,
        TaskStore,
        TaskStoreFullError,
        runner_id,
    )
    from .bounds import (
        DEFAULT_TTL_MS,
        MAX_LIVE_TASKS_PER_OWNER,
        MAX_PAGE_SIZE,
        MAX_RECORD_BYTES,
        MAX_STORE_BYTES,
        MAX_TASKS,
        MAX_TTL_MS,
        MIN_TTL_MS,
        TaskResultTooLargeError,
        clamp_ttl,
    )
    from .context import TaskContext
    from .executor import DEFAULT_MAX_RUNNING, TaskExecutor, TaskLaunch, ThreadExecutor
    from .memory import MemoryTaskStore
    from .methods import Tasks
    from .runner import TaskRunner
    from .sqlite import MAX_SQLITE_BYTES, RUNNER_EXITED, SqliteTaskStore
    from .surface import RunAsTask
    from .wire import EXTENSION

_LAZY: dict[str, str] = {
    "DEFAULT_MAX_RUNNING": ".executor",
    "DEFAULT_TTL_MS": ".bounds",
    "EXTENSION": ".wire",
    "MAX_LIVE_TASKS_PER_OWNER": ".bounds",
    "MAX_PAGE_SIZE": ".bounds",
    "MAX_RECORD_BYTES": ".bounds",
    "MAX_SQLITE_BYTES": ".sqlite",
    "MAX_STORE_BYTES": ".bounds",
    "MAX_TASKS": ".bounds",
    "MAX_TTL_MS": ".bounds",
    "MIN_TTL_MS": ".bounds",
    "MemoryTaskStore": ".memory",
    "RUNNER_EXITED": ".sqlite",
    "RunAsTask": ".surface",
    "SqliteTaskStore": ".sqlite",
    "TERMINAL": "..stores.tasks",
    "TaskContext": ".context",
    "TaskExecutor": ".executor",
    "TaskLaunch": ".executor",
    "ThreadExecutor": ".executor",
    "TaskRecord": "..stores.tasks",
    "TaskResultTooLargeError": ".bounds",
    "TaskRunner": ".runner",
    "TaskStatus": "..stores.tasks",
    "TaskStore": "..stores.tasks",
    "TaskStoreFullError": "..stores.tasks",
    "Tasks": ".methods",
    "clamp_ttl": ".bounds",
    "runner_id": "..stores.tasks",
}


__getattr__, __dir__ = exports(__name__, _LAZY, globals())

__all__ = [
    "DEFAULT_MAX_RUNNING",
    "DEFAULT_TTL_MS",
    "EXTENSION",
    "MAX_LIVE_TASKS_PER_OWNER",
    "MAX_PAGE_SIZE",
    "MAX_RECORD_BYTES",
    "MAX_SQLITE_BYTES",
    "MAX_STORE_BYTES",
    "MAX_TASKS",
    "MAX_TTL_MS",
    "MIN_TTL_MS",
    "RUNNER_EXITED",
    "TERMINAL",
    "MemoryTaskStore",
    "RunAsTask",
    "SqliteTaskStore",
    "TaskContext",
    "TaskExecutor",
    "TaskLaunch",
    "TaskRecord",
    "TaskResultTooLargeError",
    "TaskRunner",
    "TaskStatus",
    "TaskStore",
    "TaskStoreFullError",
    "Tasks",
    "ThreadExecutor",
    "clamp_ttl",
    "runner_id",
]
