"""How the Redis task store lays out its keys and stores one task.

The key names (:class:`_Keys`) and a task's hash (:class:`_Entry`: the record's plain
fields as one JSON text, each payload field as its own) with its parsing. Pure: no Redis
call and no thread here, so the store's transactions (:mod:`mcpsync.redis.task_writes`),
its dead-runner recovery (:mod:`mcpsync.redis.task_runners`) and the store itself
(:mod:`mcpsync.redis.tasks`) read one layout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..stores.tasks import TaskRecord
from ..tasks.bounds import PAYLOAD_FIELDS, encode
from ..tasks.changes import StoredTask

_PLAIN: Final = ("task_id", "owner", "surface", "tool", "status", "status_message",
                 "created_at", "last_updated_at", "ttl_ms", "poll_interval_ms", "runner",
                 "version")

_NO_PAYLOAD: Final[dict[str, Any]] = {**{f: None for f in PAYLOAD_FIELDS},
                                      "input_responses": {}}


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


@dataclass(frozen=True)
class _Entry(StoredTask):
    """A stored task: the record without its payload, the payload texts, position, cost."""

    record: TaskRecord
    texts: dict[str, str]
    seq: int
    size: int

    def fields(self) -> dict[str, str]:
        plain = {f: getattr(self.record, f) for f in _PLAIN}
        return {"r": encode(plain), "seq": str(self.seq), "size": str(self.size),
                **self.texts}


def _parse(raw: Mapping[Any, Any]) -> _Entry | None:
    if not raw:
        return None
    fields = {_text(k): _text(v) for k, v in raw.items()}
    if "r" not in fields:
        return None
    record = TaskRecord(**json.loads(fields["r"]))
    texts: dict[str, str] = {f: fields[f] for f in PAYLOAD_FIELDS if f in fields}
    return _Entry(record, texts, int(fields["seq"]), int(fields["size"]))


def _plain(raw: bytes | str | None) -> TaskRecord | None:
    """The record from a task's ``r`` field alone, without its payload: enough to judge
    its status, owner, expiry and runner without reading what it holds."""
    return None if raw is None else TaskRecord(**json.loads(_text(raw)))


def _expires_at(record: TaskRecord) -> float | None:
    return None if record.ttl_ms is None else record.created_at + record.ttl_ms / 1000


class _NeedRoom(Exception):
    """A write found a bound reached; the caller frees room (outside the transaction)."""

    def __init__(self, bound: str) -> None:
        super().__init__(bound)
        self.bound = bound


class _Keys:
    """The store's key names. One hash tag (``{prefix}``) keeps them in one cluster slot."""

    def __init__(self, prefix: str) -> None:
        base = f"{{{prefix}}}:tasks"
        self.base = base
        self.seq = f"{base}:seq"
        self.finished = f"{base}:finished"
        self.bytes = f"{base}:bytes"
        self.all = f"{base}:all"
        self.index = f"{base}:index"
        self.terminal = f"{base}:terminal"
        self.expiry = f"{base}:expiry"
        self.running = f"{base}:running"
        self.channel = f"{base}:changed"

    def task(self, task_id: str) -> str:
        return f"{self.base}:task:{task_id}"

    def owner(self, owner: str) -> str:
        return f"{self.base}:owner:{owner}"

    def live(self, owner: str) -> str:
        return f"{self.base}:live:{owner}"

    def runner(self, runner: str) -> str:
        return f"{self.base}:runner:{runner}"
