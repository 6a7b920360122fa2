"""A change to a task, described once, and the change methods written over every task
store's one read-modify-write.

``update``, ``cancel`` and ``answer`` differ only in what they change; how a change is made
atomic is each store's (a lock, a SQLite transaction, a Redis ``WATCH``). So each public
method here builds a :class:`TaskChange` and hands it to the store's
:meth:`~mcpsync.stores.changes.ReadModifyWrite._change`, and a store applies it with
:meth:`TaskChange.texts` and :attr:`TaskChange.plain`: the payload merging that every
store did the same way is written here, once. So is what every store's stored task
(:class:`StoredTask`) does with its payload texts: decode them, and take answers out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..stores.changes import ReadModifyWrite
from ..stores.tasks import TaskRecord
from .bounds import PAYLOAD_FIELDS, check_changes, encode, encode_payload

__all__ = ["StoredTask", "TaskChange", "TaskChanges"]


class StoredTask:
    """A task as a store holds it: ``record`` without its payload, and ``texts``, each
    payload field present as JSON text. Each store's entry (its lock's, its SQLite row's,
    its Redis hash's) is one, and reads its payload through these methods."""

    __slots__ = ()
    record: TaskRecord
    texts: dict[str, str]

    def decode(self) -> TaskRecord:
        """The whole record, payload included."""
        payload: dict[str, Any] = {f: json.loads(t) for f, t in self.texts.items()}
        payload.setdefault("input_responses", {})
        return replace(self.record, **payload)

    def take_responses(self, keys: Iterable[str]) -> tuple[dict[str, Any], dict[str, str]]:
        """The answers held under ``keys``, and the payload texts without them (the store
        writes those only when something was taken)."""
        held: dict[str, Any] = json.loads(self.texts.get("input_responses", "{}"))
        taken = {k: held.pop(k) for k in keys if k in held}
        texts = {f: t for f, t in self.texts.items() if f != "input_responses"}
        if held:
            texts["input_responses"] = encode(held)
        return taken, texts


@dataclass(frozen=True)
class TaskChange:
    """What one write does to a task: ``changes`` (fields of :class:`TaskRecord`), and
    ``merge_responses`` merged into its ``input_responses``. ``owner`` (``None``: the
    runner) scopes it: another owner's task is not found."""

    owner: str | None
    changes: Mapping[str, Any]
    merge_responses: Mapping[str, Any] | None = None
    #: The payload fields of ``changes`` as JSON text (``None``: cleared). Encoded when the
    #: change is made, before any store is touched: an unencodable payload is refused
    #: whether or not the task exists, and outside the store's lock.
    encoded: Mapping[str, str | None] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "encoded", encode_payload(self.changes))

    @property
    def plain(self) -> dict[str, Any]:
        """The changes that are not payload (for :meth:`TaskRecord.evolve`)."""
        return {k: v for k, v in self.changes.items() if k not in PAYLOAD_FIELDS}

    def texts(self, held: Mapping[str, str]) -> dict[str, str]:
        """The payload texts after this change, from those the record ``held``."""
        texts = dict(held)
        updates = self.encoded
        if self.merge_responses is not None:
            merged = {**json.loads(texts.get("input_responses", "{}")), **self.merge_responses}
            updates = {**updates, **encode_payload({"input_responses": merged})}
        for name, text in updates.items():
            if text is None:
                texts.pop(name, None)
            else:
                texts[name] = text
        return texts


class TaskChanges(ReadModifyWrite[TaskChange, TaskRecord | None]):
    """``update``, ``cancel`` and ``answer`` in terms of a store's one read-modify-write:
    ``_change(task_id, change)`` applies a :class:`TaskChange` unless the task is terminal
    and returns the record after (or as it was); ``None`` if the task is not found."""

    max_ttl_ms: int

    def update(self, task_id: str, **changes: Any) -> TaskRecord | None:
        check_changes(changes, self.max_ttl_ms)
        return self._change(task_id, TaskChange(None, changes))

    def cancel(self, task_id: str, owner: str, message: str | None = None) -> TaskRecord | None:
        return self._change(task_id, TaskChange(owner, {
            "status": "cancelled", "status_message": message, "input_requests": None}))

    def answer(self, task_id: str, owner: str,
               responses: Mapping[str, Any]) -> TaskRecord | None:
        return self._change(task_id, TaskChange(owner, {}, merge_responses=dict(responses)))
