"""Tasks: tool calls that outlive their request (2025-11-25 v1 and the SEP-2663 extension)."""

from .context import TaskContext
from .runner import DEFAULT_MAX_RUNNING, TaskRunner
from .store import TERMINAL, TaskRecord, TaskStatus, TaskStore, TaskStoreFullError, runner_id
from .surface import RunAsTask
from .wire import EXTENSION

__all__ = [
    "DEFAULT_MAX_RUNNING",
    "EXTENSION",
    "TERMINAL",
    "RunAsTask",
    "TaskContext",
    "TaskRecord",
    "TaskRunner",
    "TaskStatus",
    "TaskStore",
    "TaskStoreFullError",
    "runner_id",
]
