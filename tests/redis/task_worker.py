"""A second process on a Redis task store (another machine, as far as the store can tell).

    python -m tests.redis.task_worker hold URL PREFIX HEARTBEAT_TTL
        create a ``working`` task run by this process (its heartbeat expiring after
        HEARTBEAT_TTL seconds unless refreshed), print its id, then block until stdin
        closes (the test SIGKILLs it meanwhile)
    python -m tests.redis.task_worker cancel URL PREFIX TASK_ID OWNER
        cancel the task through a store of its own, print its status after

Exit status 0 when it did what it was asked.
"""

from __future__ import annotations

import secrets
import sys

from mcpsync.redis.tasks import RedisTaskStore
from mcpsync.tasks import TaskRecord, runner_id


def hold(url: str, prefix: str, heartbeat_ttl: float) -> None:
    store = RedisTaskStore(url, prefix=prefix, heartbeat_ttl=heartbeat_ttl)
    record = TaskRecord(task_id=secrets.token_urlsafe(16), owner="alice", surface="v2",
                        tool="slow", ttl_ms=600_000, runner=runner_id())
    store.create(record)
    print(record.task_id, flush=True)
    sys.stdin.read()
    store.close()


def cancel(url: str, prefix: str, task_id: str, owner: str) -> None:
    with RedisTaskStore(url, prefix=prefix) as store:
        after = store.cancel(task_id, owner, "cancelled by another machine")
        print(None if after is None else after.status, flush=True)


def main(argv: list[str]) -> None:
    command, url, prefix, *rest = argv
    if command == "hold":
        hold(url, prefix, float(rest[0]))
    elif command == "cancel":
        cancel(url, prefix, rest[0], rest[1])
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
