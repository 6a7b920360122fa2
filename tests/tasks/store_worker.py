"""A second process using a task store file, for the cross-process tests.

    python -m tests.tasks.store_worker hold PATH
        create a ``working`` task run by this process and a ``completed`` one, print their
        ids as one JSON line, then block until stdin closes (the test kills it meanwhile)
    python -m tests.tasks.store_worker complete PATH TASK_ID
        read the task, complete it with a result naming this pid, create a task of its own,
        print that task's id
    python -m tests.tasks.store_worker hammer PATH TASK_ID THREADS ROUNDS
        THREADS threads, each ROUNDS times: create, answer TASK_ID (a key per round),
        update, get, list, wait briefly, cancel; print "ok" (any error: a traceback and
        exit status 1)

Exit status 0 when it did what it was asked.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading

from mcpsync.tasks import SqliteTaskStore, TaskRecord, runner_id


def _record(owner: str = "alice") -> TaskRecord:
    return TaskRecord(task_id=secrets.token_urlsafe(16), owner=owner, surface="v2",
                      tool="slow", ttl_ms=600_000, runner=runner_id())


def hold(path: str) -> None:
    store = SqliteTaskStore(path)
    working = _record()
    done = _record()
    store.create(working)
    store.create(done)
    store.update(done.task_id, status="completed",
                 result={"content": [{"type": "text", "text": f"done by {os.getpid()}"}]})
    print(json.dumps({"working": working.task_id, "completed": done.task_id,
                      "pid": os.getpid()}), flush=True)
    sys.stdin.read()  # until the test closes stdin (or kills this process)
    store.close()


def complete(path: str, task_id: str) -> None:
    with SqliteTaskStore(path) as store:
        record = store.get(task_id, owner="alice")
        assert record is not None and record.status == "working", record
        store.update(task_id, status="completed",
                     result={"content": [{"type": "text", "text": f"by {os.getpid()}"}]})
        mine = _record()
        store.create(mine)
        print(mine.task_id, flush=True)


def hammer(path: str, task_id: str, threads: int, rounds: int) -> None:
    store = SqliteTaskStore(path)
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(i: int) -> None:
        try:
            start.wait(60)
            for j in range(rounds):
                own = _record(owner=f"p{os.getpid()}-{i}")
                store.create(own)
                store.answer(task_id, "alice", {f"{os.getpid()}-{i}-{j}": j})
                store.update(own.task_id, status_message=f"round {j}")
                assert store.get(own.task_id) is not None
                store.list(own.owner)
                store.wait(own.task_id, 99, timeout=0.001)
                store.cancel(own.task_id, own.owner)
        except BaseException as exc:
            errors.append(exc)
            raise

    workers = [threading.Thread(target=run, args=(i,), name=f"hammer-{i}")
               for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    store.close()
    if errors or any(w.is_alive() for w in workers):
        sys.exit(1)
    print("ok", flush=True)


def main(argv: list[str]) -> None:
    command, path, *rest = argv
    if command == "hold":
        hold(path)
    elif command == "complete":
        complete(path, rest[0])
    elif command == "hammer":
        hammer(path, rest[0], int(rest[1]), int(rest[2]))
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
