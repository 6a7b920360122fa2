"""Tasks: tool calls that outlive their request (2025-11-25 v1 and the SEP-2663 extension)."""

from .store import TERMINAL, TaskRecord, TaskStatus, TaskStore, TaskStoreFullError, runner_id

__all__ = ["TERMINAL", "TaskRecord", "TaskStatus", "TaskStore", "TaskStoreFullError", "runner_id"]
