"""Where the documentation names the handler pool (``mcpsync.engine.pool``): it lives in
:mod:`mcpsync.threads.pool` now, below ``transports/`` (whose HTTP client uses it too)."""

from ..threads.pool import Job, PoolFullError, WorkerPool, release_current_slot

__all__ = ["Job", "PoolFullError", "WorkerPool", "release_current_slot"]
