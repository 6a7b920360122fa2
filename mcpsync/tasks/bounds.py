"""The bounds every task store keeps, and the small pieces both stores share.

A task store is written to by clients (every ``tools/call`` as a task adds a record, every
``tasks/update`` adds answers), so without bounds a client could grow a server's memory or
disk without limit. Each bound here has a default, a keyword on both stores, and a defined
answer when exceeded (see ``docs/tasks.md``, "Stores").

Sizes are measured as the UTF-8 bytes of the compact JSON of a record's payload (result,
error, input requests, input responses) plus its strings: what a store really keeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any, Final, get_args

if TYPE_CHECKING:
    from ..stores.tasks import TaskRecord

__all__ = [
    "DEFAULT_TTL_MS",
    "MAX_LIVE_TASKS_PER_OWNER",
    "MAX_PAGE_SIZE",
    "MAX_RECORD_BYTES",
    "MAX_STORE_BYTES",
    "MAX_TASKS",
    "MAX_TTL_MS",
    "MIN_TTL_MS",
    "TaskResultTooLargeError",
    "clamp_ttl",
]

#: The ttl a server gives a task whose client asked for none (one hour).
DEFAULT_TTL_MS: Final = 60 * 60 * 1000
#: No task is kept longer than this after its creation (24 hours); a longer ``ttl_ms``
#: is clamped to it by :func:`clamp_ttl` and by the stores' ``create``.
MAX_TTL_MS: Final = 24 * 60 * 60 * 1000
#: The shortest ttl :func:`clamp_ttl` grants (one second).
MIN_TTL_MS: Final = 1000
#: Live (``working`` / ``input_required``) tasks one owner may have at once; ``create``
#: raises :class:`~mcpsync.stores.tasks.TaskStoreFullError` beyond it.
MAX_LIVE_TASKS_PER_OWNER: Final = 1000
#: Records a store keeps in all; beyond it the oldest terminal ones are evicted, and
#: when every record is live ``create`` raises ``TaskStoreFullError``.
MAX_TASKS: Final = 10_000
#: One record's payload (its result, error, input requests and responses): the same as a
#: message (16 MiB), since a result must fit in the message that carries it.
MAX_RECORD_BYTES: Final = 16 * 1024 * 1024
#: All records' payloads together, in :class:`~mcpsync.tasks.memory.MemoryTaskStore`
#: (256 MiB): the oldest terminal tasks are evicted first, never a live one.
MAX_STORE_BYTES: Final = 256 * 1024 * 1024
#: The largest page ``list`` returns, whatever ``limit`` asks.
MAX_PAGE_SIZE: Final = 100

#: The fields whose values are JSON documents (stored as JSON text, measured in bytes).
PAYLOAD_FIELDS: Final = ("result", "error", "input_requests", "input_responses")
#: What ``update`` may not change: the identity of a task and its version counter.
FIXED_FIELDS: Final = frozenset({"task_id", "owner", "surface", "created_at", "version"})


@cache
def _known() -> tuple[frozenset[str], frozenset[str]]:
    """A record's fields and the statuses, read off the store contract when first needed
    (``Server`` imports this module for its defaults; a stdio server needs no store)."""
    from ..stores.tasks import TaskRecord, TaskStatus

    return frozenset(TaskRecord.__dataclass_fields__), frozenset(get_args(TaskStatus))
#: What a record costs besides its payload and strings (its slot, indexes, numbers).
RECORD_OVERHEAD: Final = 512


class TaskResultTooLargeError(ValueError):
    """A write would make a record's payload larger than the store allows (one record over
    ``max_record_bytes``, or all of them over ``max_bytes`` even after evicting every
    terminal task). Nothing was written. The runner stores the task as ``failed`` with a
    small error instead (a write that does not grow a record never raises this); the
    ``tasks/update`` surface answers it as invalid params."""


def clamp_ttl(ttl_ms: int | None, *, default: int | None = DEFAULT_TTL_MS,
              maximum: int = MAX_TTL_MS, minimum: int = MIN_TTL_MS) -> int | None:
    """The ttl a server grants: ``default`` when the client asked none, between ``minimum``
    (a task gone before anyone could read it is of no use) and ``maximum``. Report the
    granted value (not the asked one) in ``CreateTaskResult``."""
    if ttl_ms is None:
        return None if default is None else max(minimum, min(default, maximum))
    return max(minimum, min(int(ttl_ms), maximum))


def encode(value: Any) -> str:
    """Compact JSON, the form a payload is stored and measured in. ``ValueError`` /
    ``TypeError`` for what JSON cannot carry (NaN, sets, objects): the caller's bug,
    reported when it writes rather than when a client reads."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_payload(values: Mapping[str, Any]) -> dict[str, str | None]:
    """The JSON text of each payload field in ``values``; ``None`` where nothing is stored
    (no value, or no input responses)."""
    return {f: (None if values[f] is None or (f == "input_responses" and not values[f])
                else encode(values[f]))
            for f in PAYLOAD_FIELDS if f in values}


def record_size(record: TaskRecord, texts: Mapping[str, str | None]) -> int:
    """What a record costs against the byte bounds: its payload texts and its strings."""
    return RECORD_OVERHEAD + sum(text_bytes(t) for t in texts.values()) + sum(
        text_bytes(s) for s in (record.task_id, record.owner, record.tool,
                                record.status_message, record.runner))


def text_bytes(text: str | None) -> int:
    return 0 if text is None else len(text.encode("utf-8"))


def check_changes(changes: dict[str, Any], max_ttl_ms: int) -> None:
    """``update``'s keywords: fields of :class:`TaskRecord` that are not fixed; a ttl is
    clamped to ``max_ttl_ms`` (in place), as on ``create``."""
    fields, statuses = _known()
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise TypeError(f"TaskRecord has no field {', '.join(unknown)}")
    fixed = sorted(set(changes) & FIXED_FIELDS)
    if fixed:
        raise ValueError(f"a task's {', '.join(fixed)} cannot change")
    if "status" in changes and changes["status"] not in statuses:
        raise ValueError(f"{changes['status']!r} is not a task status")
    if changes.get("ttl_ms") is not None:
        changes["ttl_ms"] = max(0, min(int(changes["ttl_ms"]), max_ttl_ms))


def page_size(limit: int) -> int:
    """``limit`` brought into 1..:data:`MAX_PAGE_SIZE`."""
    return max(1, min(int(limit), MAX_PAGE_SIZE))


def parse_cursor(cursor: str | None) -> int:
    """The position a cursor names (0: the start). Cursors are the decimal position of the
    last record a page showed; anything else is an unknown cursor (``ValueError``)."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not cursor.isascii() or not cursor.isdigit() \
            or len(cursor) > 19:
        raise ValueError("unknown cursor")
    return int(cursor)


def clamp_record_ttl(record: TaskRecord, maximum: int) -> TaskRecord:
    """The record a store keeps: its ttl at most ``maximum``."""
    if record.ttl_ms is not None and (record.ttl_ms > maximum or record.ttl_ms < 0):
        return replace(record, ttl_ms=max(0, min(record.ttl_ms, maximum)))
    return record
