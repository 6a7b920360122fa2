"""The task store contract: the record every task surface reads and writes, the
:class:`TaskStore` protocol, and what a store may do beyond it (:class:`TaskStoreCapabilities`).

A task outlives the request that created it, so its state cannot live on a handler's stack:
it lives in a :class:`TaskStore`. The runner (the thread executing the tool) and every
``tasks/*`` request (possibly served by another worker process sharing the store) meet only
here. That is why cancellation and answers to input requests are *written to the store*
rather than signalled in memory: the worker that receives ``tasks/cancel`` may not be the one
running the task.

Rules every store keeps (they are what make a multi-worker deployment correct):

* A terminal status (``completed``, ``failed``, ``cancelled``) is final: an update to a
  terminal record changes nothing and returns the record as it is. The first writer wins
  a cancel/complete race, and a late result can never resurrect a cancelled task.
* ``version`` grows by one on every change, so :meth:`TaskStore.wait` can say "changed
  since what I saw" without comparing payloads.
* Reads are scoped by ``owner``: a task of another owner is reported exactly like a task
  that does not exist (``None``), never as "forbidden".
* Expiry: a record is gone once ``ttl_ms`` has passed since it was *created*
  (``ttl_ms=None`` keeps it until the store's own bound evicts it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

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

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]

#: The statuses a task never leaves.
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


#: Random per process (what ``secrets.token_hex(8)`` gives, without importing ``secrets``).
_BOOT = os.urandom(8).hex()


def runner_id() -> str:
    """This process, as a task's ``runner``: ``host:pid:boot``. The boot token tells a
    recycled pid apart from the process that created the task."""
    import socket  # here, not at import: a server that never runs a task never needs it

    return f"{socket.gethostname()}:{os.getpid()}:{_BOOT}"


class TaskStoreFullError(Exception):
    """The store holds as many live tasks for this owner as it may; the request creating
    another is refused (the server answers it with a JSON-RPC error, nothing is lost)."""


@dataclass(frozen=True)
class TaskRecord:
    """One task, as stored. Immutable: stores hand out copies, changes go through the store.

    Times are seconds since the epoch (``time.time()``, so tests can freeze them); the wire
    shows them as ISO-8601 strings and ``ttl_ms`` / ``poll_interval_ms`` in milliseconds.
    """

    task_id: str
    #: Who may see it: the session id in the handshake era, the principal (or a key derived
    #: from it) in 2026-07-28 once auth exists, ``""`` for an anonymous stateless caller.
    owner: str
    #: Which task surface created it: ``"v1"`` (2025-11-25) or ``"v2"`` (the extension).
    surface: Literal["v1", "v2"]
    #: What ran: the tool name (``tools/call``'s ``params.name``).
    tool: str
    status: TaskStatus = "working"
    status_message: str | None = None
    #: Looked up at creation (not bound at import) so a frozen clock in tests applies.
    created_at: float = field(default_factory=lambda: time.time())
    last_updated_at: float = 0.0
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    #: The tool's result in wire form (a ``CallToolResult`` dict) once ``completed`` (or a
    #: v1 ``failed`` task whose tool reported ``isError``).
    result: dict[str, Any] | None = None
    #: A JSON-RPC error object (``code``, ``message``, optional ``data``) once ``failed``.
    error: dict[str, Any] | None = None
    #: Questions the task is waiting on (v2 ``inputRequests``: key -> request), while
    #: ``input_required``.
    input_requests: dict[str, Any] | None = None
    #: Answers delivered by ``tasks/update`` (key -> response) not yet taken by the runner.
    input_responses: dict[str, Any] = field(default_factory=dict)
    #: Which process runs it (``host:pid:boot``): lets a store opened after a crash mark
    #: the tasks of a dead runner ``failed`` instead of leaving them ``working`` forever.
    runner: str = ""
    version: int = 0

    def __post_init__(self) -> None:
        if not self.last_updated_at:
            object.__setattr__(self, "last_updated_at", self.created_at)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: float | None = None) -> bool:
        if self.ttl_ms is None:
            return False
        return (time.time() if now is None else now) >= self.created_at + self.ttl_ms / 1000

    def evolve(self, **changes: Any) -> TaskRecord:
        """A copy with ``changes``, one version later, stamped now (for stores)."""
        return replace(self, **changes, version=self.version + 1,
                       last_updated_at=max(time.time(), self.created_at))


class RecoversTasks(Protocol):
    """A store that can tell a dead runner's tasks: ``recover`` marks every live task whose
    runner process is gone ``failed`` (a store shared by processes, which outlives them)."""

    def recover(self) -> int:
        """Fail the live tasks of runners that are gone; how many."""
        ...


@dataclass(frozen=True)
class TaskStoreCapabilities:
    """What a :class:`TaskStore` can do beyond the protocol, as it declares it in its
    ``capabilities``: each part is the store seen as that capability, or ``None``."""

    #: Failing the tasks of dead runners on demand (SQLite, Redis).
    recovers: RecoversTasks | None = None


@runtime_checkable
class TaskStore(Protocol):
    """Where tasks live. Implementations must be safe to call from many threads at once,
    and :class:`~mcpsync.tasks.sqlite.SqliteTaskStore` also from many processes.

    A store declares its optional parts in :attr:`capabilities` (see :mod:`mcpsync.stores`):
    they are read there, never probed for."""

    @property
    def capabilities(self) -> TaskStoreCapabilities:
        """The optional parts this store has."""
        ...

    def create(self, record: TaskRecord) -> None:
        """Store a new task. Raises :class:`TaskStoreFullError` when the owner has too many
        live tasks, ``KeyError`` if the id exists. Durable when it returns: the caller
        sends ``CreateTaskResult`` only afterwards."""

    def get(self, task_id: str, owner: str | None = None) -> TaskRecord | None:
        """The task, or ``None`` if absent, expired, or (when ``owner`` is given) another
        owner's. ``owner=None`` is for the runner, which holds the id it created."""

    def update(self, task_id: str, **changes: Any) -> TaskRecord | None:
        """Apply ``changes`` (any :class:`TaskRecord` field but the id, owner, surface,
        created_at and version) atomically. A terminal record is returned unchanged.
        ``None`` if the task is gone."""

    def cancel(self, task_id: str, owner: str, message: str | None = None) -> TaskRecord | None:
        """Mark the task ``cancelled`` unless it is already terminal; the record after.
        The runner notices through :meth:`wait` or :meth:`get`. ``None`` if not found."""

    def answer(self, task_id: str, owner: str,
               responses: Mapping[str, Any]) -> TaskRecord | None:
        """Merge ``tasks/update``'s ``inputResponses`` into ``input_responses``; the record
        after, or ``None`` if not found. Answers to a terminal task are ignored."""

    def take_responses(self, task_id: str, keys: list[str]) -> dict[str, Any]:
        """Remove and return the answers among ``keys`` (for the runner)."""

    def list(self, owner: str, cursor: str | None = None,
             limit: int = 50) -> tuple[list[TaskRecord], str | None]:
        """The owner's live tasks, oldest first, a page at a time; the next cursor or
        ``None``. An unknown cursor raises ``ValueError``."""

    def wait(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        """Block until the task's ``version`` exceeds ``after_version`` (or it is gone, or
        ``timeout`` seconds pass); the record as it is then (``None`` if gone)."""

    def expire(self, now: float | None = None) -> int:
        """Delete expired records; how many. Stores also expire lazily on access."""

    def close(self) -> None:
        """Release resources (files, connections). Idempotent."""
