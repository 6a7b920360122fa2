"""How a stored task looks on the wire, for each surface.

Two surfaces read the same :class:`~mcpsync.stores.tasks.TaskRecord`:

* **v2**, the extension ``io.modelcontextprotocol/tasks`` (SEP-2663): a flat task object
  with ``ttlMs`` / ``pollIntervalMs``; ``tasks/get`` inlines ``result``, ``error`` or
  ``inputRequests`` by status (a ``DetailedTask``).
* **v1**, the frozen 2025-11-25 surface: a ``Task`` with ``ttl`` / ``pollInterval``, nested
  under ``task`` in ``CreateTaskResult``; results travel through ``tasks/result``.

Pure functions: no store, no threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # (annotations only: the tasks extension imports this at start-up)
    from ..stores.tasks import TaskRecord

#: The extension's identifier, under ``capabilities.extensions``.
EXTENSION: Final = "io.modelcontextprotocol/tasks"
#: The ``subscriptions/listen`` filter field of the task ids a listen follows, and the
#: notification a v2 task's status goes out as.
TASK_IDS: Final = "taskIds"
STATUS_METHOD: Final = "notifications/tasks"
#: The v1 ``_meta`` key that ties a message to its task.
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"


def iso(timestamp: float) -> str:
    """``2026-12-03T12:00:00.123Z``: ISO 8601 in UTC, millisecond precision."""
    from datetime import datetime, timezone  # on the first task: off a server's start-up

    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def pending_requests(record: TaskRecord) -> dict[str, Any]:
    """The input requests still waiting for an answer. An answer ``tasks/update`` stored
    but the runner has not taken yet already counts: the client sees its answer accepted
    at once, not after the runner wakes."""
    asked = record.input_requests or {}
    return {key: request for key, request in asked.items()
            if key not in record.input_responses}


def shown_status(record: TaskRecord) -> str:
    """The status a client sees: a v2 task is ``input_required`` only while one of its
    ``inputRequests`` is unanswered (a v1 task's questions are requests, not stored)."""
    if (record.status == "input_required" and record.surface == "v2"
            and not pending_requests(record)):
        return "working"
    return record.status


def _common(record: TaskRecord) -> dict[str, Any]:
    task: dict[str, Any] = {
        "taskId": record.task_id,
        "status": shown_status(record),
        "createdAt": iso(record.created_at),
        "lastUpdatedAt": iso(record.last_updated_at),
    }
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    return task


def v2_task(record: TaskRecord) -> dict[str, Any]:
    """The v2 ``Task`` (what ``CreateTaskResult`` carries flat, beside ``resultType``)."""
    task = _common(record)
    task["ttlMs"] = record.ttl_ms
    if record.poll_interval_ms is not None:
        task["pollIntervalMs"] = record.poll_interval_ms
    return task


def v2_detailed(record: TaskRecord) -> dict[str, Any]:
    """The v2 ``DetailedTask`` of ``tasks/get``: the task plus what its status carries."""
    task = v2_task(record)
    status = task["status"]
    if status == "completed":
        task["result"] = record.result or {"content": []}
    elif status == "failed":
        task["error"] = record.error or {"code": -32603, "message": "the task failed"}
    elif status == "input_required":
        task["inputRequests"] = pending_requests(record)
    return task


def v1_task(record: TaskRecord) -> dict[str, Any]:
    """The 2025-11-25 ``Task``."""
    task = _common(record)
    task["ttl"] = record.ttl_ms
    if record.poll_interval_ms is not None:
        task["pollInterval"] = record.poll_interval_ms
    return task


def related(task_id: str) -> dict[str, Any]:
    """The v1 ``_meta`` entry naming the task a message belongs to."""
    return {RELATED_TASK: {"taskId": task_id}}
