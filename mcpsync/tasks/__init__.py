"""Tasks: tool calls that outlive their request (2025-11-25 v1 and the SEP-2663 extension).

The stores: :class:`MemoryTaskStore` (the default, one process) and :class:`SqliteTaskStore`
(a file shared by threads and processes on one host); their bounds are in :mod:`.bounds`.
"""

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
from .memory import MemoryTaskStore
from .runner import DEFAULT_MAX_RUNNING, TaskRunner
from .sqlite import MAX_SQLITE_BYTES, RUNNER_EXITED, SqliteTaskStore
from .store import TERMINAL, TaskRecord, TaskStatus, TaskStore, TaskStoreFullError, runner_id
from .surface import RunAsTask
from .wire import EXTENSION

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
    "TaskRecord",
    "TaskResultTooLargeError",
    "TaskRunner",
    "TaskStatus",
    "TaskStore",
    "TaskStoreFullError",
    "clamp_ttl",
    "runner_id",
]
