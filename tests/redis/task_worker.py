"""A second process on a Redis task store (another machine, as far as the store can tell).

    python -m tests.redis.task_worker hold URL PREFIX HEARTBEAT_TTL
        create a ``working`` task run by this process (its heartbeat expiring after
        HEARTBEAT_TTL seconds unless refreshed), print its id, then block until stdin
        closes (the test SIGKILLs it meanwhile)
    python -m tests.redis.task_worker cancel URL PREFIX TASK_ID OWNER
        cancel the task through a store of its own, print its status after
    python -m tests.redis.task_worker hammer URL PREFIX TASK_ID THREADS ROUNDS
        THREADS named threads, each ROUNDS times: create a task, answer TASK_ID (a key
        per round), complete its own task, list, wait briefly; print "ok" (any error: a
        traceback and exit status 1)
    python -m tests.redis.task_worker fill URL PREFIX OWNER BOUND THREADS
        THREADS named threads create live tasks of OWNER (with max_live_per_owner=BOUND)
        until refused; print how many were created

Exit status 0 when it did what it was asked.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import traceback

from mcpsync.redis.tasks import RedisTaskStore
from mcpsync.tasks import TaskRecord, TaskStoreFullError, runner_id


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


def hammer(url: str, prefix: str, task_id: str, threads: int, rounds: int) -> None:
    errors: list[BaseException] = []
    with RedisTaskStore(url, prefix=prefix) as store:

        def work(i: int) -> None:
            try:
                for j in range(rounds):
                    own = TaskRecord(task_id=secrets.token_urlsafe(16), owner=f"p{i}",
                                     surface="v2", tool="slow", ttl_ms=600_000)
                    store.create(own)
                    if store.answer(task_id, "alice", {f"{os.getpid()}-{i}-{j}": j}) is None:
                        raise AssertionError("the shared task is gone")
                    store.update(own.task_id, status="completed", result={"n": j})
                    store.list(own.owner)
                    store.wait(own.task_id, 0, timeout=0.01)
            except BaseException as exc:  # reported below
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(i,), name=f"hammer-{i}")
                   for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    if errors:
        traceback.print_exception(errors[0])
        sys.exit(1)
    print("ok", flush=True)


def fill(url: str, prefix: str, owner: str, bound: int, threads: int) -> None:
    made: list[int] = []
    with RedisTaskStore(url, prefix=prefix, max_live_per_owner=bound) as store:

        def work() -> None:
            count = 0
            for _ in range(bound * 2):
                try:
                    store.create(TaskRecord(task_id=secrets.token_urlsafe(16), owner=owner,
                                            surface="v2", tool="slow", ttl_ms=600_000))
                except TaskStoreFullError:
                    continue
                count += 1
            made.append(count)

        workers = [threading.Thread(target=work, name=f"fill-{i}") for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    print(sum(made), flush=True)


def main(argv: list[str]) -> None:
    command, url, prefix, *rest = argv
    if command == "hold":
        hold(url, prefix, float(rest[0]))
    elif command == "cancel":
        cancel(url, prefix, rest[0], rest[1])
    elif command == "fill":
        fill(url, prefix, rest[0], int(rest[1]), int(rest[2]))
    elif command == "hammer":
        hammer(url, prefix, rest[0], int(rest[1]), int(rest[2]))
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
