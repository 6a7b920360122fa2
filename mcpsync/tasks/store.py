"""The task store contract's old address, kept importable while modules outside this move
still name it: the contract lives in :mod:`mcpsync.stores.tasks` (import it from there, or
from :mod:`mcpsync.tasks`)."""

from ..stores.tasks import (
    TERMINAL,
    RecoversTasks,
    TaskRecord,
    TaskStatus,
    TaskStore,
    TaskStoreCapabilities,
    TaskStoreFullError,
    runner_id,
)

__all__ = [
    "TERMINAL",
    "RecoversTasks",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "TaskStoreCapabilities",
    "TaskStoreFullError",
    "runner_id",
]
