"""The store contracts, side by side: what a deployment's shared state must do, whatever
keeps it (memory, files, SQLite, Redis).

* :mod:`.sessions`: :class:`SessionStore` (handshake-era sessions any worker can take up)
  and its optional :class:`SharedSessionState` (log levels and subscriptions);
* :mod:`.events`: :class:`EventStore` (SSE events kept for ``Last-Event-ID``) and its
  optional :class:`ForgetsStreams`;
* :mod:`.tasks`: :class:`TaskStore` and :class:`TaskRecord` (tool calls that outlive
  their request) and its optional :class:`RecoversTasks`;
* :mod:`.changes`: :class:`ReadModifyWrite`, the one base of every store whose changes
  go through one atomic read-modify-write.

**Optional capabilities are declared, in one way.** Each contract has a ``capabilities``
property returning a small frozen dataclass (:class:`SessionStoreCapabilities`,
:class:`EventStoreCapabilities`, :class:`TaskStoreCapabilities`) whose fields are the
store seen as each optional protocol, or ``None`` when it lacks it. A caller asks
``store.capabilities.forgets`` and gets a typed object or ``None``; nothing probes a
store with ``getattr`` or ``isinstance``, so a store has exactly the capabilities it says
it has, and a type checker verifies that it has the methods of each one it declares.

The backends live with what uses them (``mcpsync.http``: memory and file sessions, memory
events; ``mcpsync.tasks``: memory and SQLite tasks; ``mcpsync.redis``: all three on
Redis). This package imports nothing of mcpsync but itself, so any of them can import it;
its names are imported on first use (a stdio server never needs a store contract).
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .changes import ReadModifyWrite
    from .events import EventStore, EventStoreCapabilities, ForgetsStreams
    from .sessions import (
        SessionChange,
        SessionChanges,
        SessionRecord,
        SessionStore,
        SessionStoreCapabilities,
        SharedSessionState,
    )
    from .tasks import (
        TERMINAL,
        RecoversTasks,
        TaskRecord,
        TaskStatus,
        TaskStore,
        TaskStoreCapabilities,
        TaskStoreFullError,
        runner_id,
    )

_LAZY: dict[str, str] = {
    "EventStore": ".events",
    "EventStoreCapabilities": ".events",
    "ForgetsStreams": ".events",
    "ReadModifyWrite": ".changes",
    "RecoversTasks": ".tasks",
    "SessionChange": ".sessions",
    "SessionChanges": ".sessions",
    "SessionRecord": ".sessions",
    "SessionStore": ".sessions",
    "SessionStoreCapabilities": ".sessions",
    "SharedSessionState": ".sessions",
    "TERMINAL": ".tasks",
    "TaskRecord": ".tasks",
    "TaskStatus": ".tasks",
    "TaskStore": ".tasks",
    "TaskStoreCapabilities": ".tasks",
    "TaskStoreFullError": ".tasks",
    "runner_id": ".tasks",
}

__all__ = [
    "TERMINAL",
    "EventStore",
    "EventStoreCapabilities",
    "ForgetsStreams",
    "ReadModifyWrite",
    "RecoversTasks",
    "SessionChange",
    "SessionChanges",
    "SessionRecord",
    "SessionStore",
    "SessionStoreCapabilities",
    "SharedSessionState",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "TaskStoreCapabilities",
    "TaskStoreFullError",
    "runner_id",
]

__getattr__, __dir__ = exports(__name__, _LAZY, globals())
