"""The SQLite store across real processes: another process on the same file reads and
writes the same tasks; a process killed while running a task leaves it ``failed`` (not
``working`` forever) for the next process that opens the file; completed results survive;
threads in several processes at once never see ``database is locked``."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync.tasks import SqliteTaskStore, runner_id
from mcpsync.tasks.runners import process_identity, registration, runner_alive
from mcpsync.tasks.sqlite import RUNNER_EXITED
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import run_threads, wait_until
from tests.stores.backends import make_record

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and /proc")


def worker(*args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "tests.tasks.store_worker", *args],
                            cwd=ROOT, env=env, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    return out


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "tasks.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteTaskStore]:
    with SqliteTaskStore(path) as opened:
        yield opened


def test_another_process_completes_a_task_and_a_waiter_here_sees_it(store, path):
    record = make_record(runner=runner_id())
    store.create(record)
    seen: list[object] = []
    waiting = threading.Thread(
        target=lambda: seen.append(store.wait(record.task_id, record.version, timeout=WAIT)),
        name="t-sqlite-waiter")
    waiting.start()
    other = worker("complete", str(path), record.task_id)
    created = finish(other).strip()
    waiting.join(WAIT)
    assert not waiting.is_alive()
    done = seen[0]
    assert done is not None and done.status == "completed"  # type: ignore[attr-defined]
    assert done.result == {"content": [{"type": "text", "text": f"by {other.pid}"}]}  # type: ignore[attr-defined]
    theirs = store.get(created, owner="alice")
    assert theirs is not None and theirs.status == "working"
    assert [r.task_id for r in store.list("alice")[0]] == [record.task_id, created]


def _hold(path: Path) -> tuple[subprocess.Popen[str], dict[str, object]]:
    proc = worker("hold", str(path), stdin=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)


def test_a_killed_runner_leaves_its_task_failed_and_results_survive(path):
    proc, ids = _hold(path)
    try:
        # while it runs, opening the file recovers nothing: its runner is alive
        with SqliteTaskStore(path) as live:
            running = live.get(str(ids["working"]))
            assert running is not None and running.status == "working"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT)
    assert proc.returncode == -signal.SIGKILL
    with SqliteTaskStore(path) as reopened:
        failed = reopened.get(str(ids["working"]), owner="alice")
        assert failed is not None
        assert failed.status == "failed"
        assert failed.error == RUNNER_EXITED == {
            "code": -32603,
            "message": "the server process running this task exited before it finished"}
        assert failed.status_message == RUNNER_EXITED["message"]
        assert failed.version == running.version + 1
        done = reopened.get(str(ids["completed"]), owner="alice")
        assert done is not None and done.status == "completed"
        assert done.result == {"content": [{"type": "text", "text": f"done by {ids['pid']}"}]}
        assert reopened.recover() == 0  # once is enough


def test_a_killed_runner_not_yet_reaped_is_dead_too(path):
    proc, ids = _hold(path)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        wait_until(lambda: runner_alive(f"{socket.gethostname()}:{proc.pid}:x") is False,
                   timeout=WAIT, message="the killed worker never became a zombie")
        with SqliteTaskStore(path) as reopened:
            failed = reopened.get(str(ids["working"]))
            assert failed is not None and failed.status == "failed"
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT)


def test_this_pid_with_another_boot_token_is_a_dead_runner(store, path):
    """A container restarted in place: same hostname, same pid, another process."""
    host, pid, _ = runner_id().rsplit(":", 2)
    gone = make_record(runner=f"{host}:{pid}:0000000000000000")
    mine = make_record(runner=runner_id())
    store.create(gone)
    store.create(mine)
    assert store.recover() == 1
    after = store.get(gone.task_id)
    assert after is not None and after.status == "failed"
    still = store.get(mine.task_id)
    assert still is not None and still.status == "working"


@pytest.mark.skipif(registration() is None, reason="no /proc here")
def test_a_recycled_pid_is_told_apart_by_its_start_time(store, path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)
    try:
        host = socket.gethostname()
        namespace = os.readlink("/proc/self/ns/pid")
        runners = {
            # registered by a process that had this pid before
            "recycled": (f"{namespace} other-boot:1", "failed"),
            # registered by the process that has it now
            "same": (f"{namespace} {process_identity(sleeper.pid)}", "working"),
            # never registered (a system without /proc): only the pid can be checked
            "unknown": (None, "working"),
            # registered in another pid namespace (a container sharing the file and the
            # hostname): its pids mean nothing here, so it is not judged
            "elsewhere": ("pid:[1] other-boot:1", "working"),
        }
        records = {name: make_record(runner=f"{host}:{sleeper.pid}:{name}")
                   for name in runners}
        for record in records.values():
            store.create(record)
        with sqlite3.connect(path) as raw:  # what those runners would have registered
            raw.executemany("INSERT INTO runners VALUES (?, ?)",
                            [(records[n].runner, reg) for n, (reg, _) in runners.items()
                             if reg is not None])
        raw.close()
        assert store.recover() == 1
        statuses = {r.runner.rsplit(":", 1)[1]: r.status for r in store.list("alice")[0]}
        assert statuses == {name: status for name, (_, status) in runners.items()}
    finally:
        sleeper.kill()
        sleeper.wait(WAIT)


def test_this_process_registers_itself_when_it_runs_a_task(store, path):
    store.create(make_record(runner=runner_id()))
    store.create(make_record(runner="someone-else:1:x"))
    with sqlite3.connect(path) as raw:
        rows = raw.execute("SELECT runner, identity FROM runners").fetchall()
    raw.close()
    assert rows == [(runner_id(), registration())]


def test_tasks_of_another_host_and_without_runner_are_left_alone(store):
    elsewhere = make_record(runner="some-other-host.example:1:abc")
    nobody = make_record(runner="")
    garbled = make_record(runner="no-pid-here")
    for record in (elsewhere, nobody, garbled):
        store.create(record)
    assert store.recover() == 0
    assert all(r.status == "working" for r in store.list("alice")[0])


def test_runner_registration_is_bounded(store, path):
    """Each process that ran a task leaves one row; rows of runners with no live tasks go."""
    host = socket.gethostname()
    with sqlite3.connect(path) as raw:
        raw.executemany("INSERT INTO runners VALUES (?, NULL)",
                        [(f"{host}:{n}:old",) for n in range(50)])
    raw.close()
    record = make_record(runner=runner_id())
    store.create(record)
    store.recover()
    with sqlite3.connect(path) as raw:
        left = [r[0] for r in raw.execute("SELECT runner FROM runners")]
    raw.close()
    assert left == [runner_id()]


def test_threads_and_processes_hammering_one_file(store, path):
    shared = make_record(status="input_required")
    store.create(shared)
    threads, rounds = 4, 60
    others = [worker("hammer", str(path), shared.task_id, str(threads), str(rounds))
              for _ in range(2)]

    def here(i: int) -> None:
        for j in range(rounds):
            own = make_record(owner=f"here-{i}")
            store.create(own)
            store.answer(shared.task_id, "alice", {f"here-{i}-{j}": j})
            store.update(own.task_id, status="completed", result={"n": j})
            store.list(own.owner)

    try:
        run_threads(here, threads, name="t-sqlite-hammer", timeout=WAIT)
    finally:
        outs = [finish(p) for p in others]
    assert outs == ["ok\n", "ok\n"]
    after = store.get(shared.task_id)
    assert after is not None
    assert len(after.input_responses) == 3 * threads * rounds  # no answer lost
    assert after.version == 3 * threads * rounds


def test_a_file_that_is_not_a_store_is_a_clear_error(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("these are not the tasks you are looking for\n" * 100)
    with pytest.raises(sqlite3.DatabaseError, match="not a usable task store"):
        SqliteTaskStore(bad)


def test_a_file_from_a_newer_schema_is_refused(path):
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(sqlite3.DatabaseError, match="newer mcpsync"):
        SqliteTaskStore(path)


def test_close_is_idempotent(path):
    store = SqliteTaskStore(path)
    store.close()
    store.close()


def _use_after_fork(store: SqliteTaskStore, task_id: str, parent_conn_id: int,
                    report: Any) -> None:
    try:
        record = make_record(task_id=task_id, runner=runner_id())
        store.create(record)
        store.update(task_id, status="completed", result={"child": os.getpid()})
        report.put(("ok", id(store._conn) != parent_conn_id))
    except BaseException as exc:  # reported to the parent
        report.put(("error", repr(exc)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_store_opened_before_a_fork_works_in_the_child_with_its_own_connection(store):
    """gunicorn --preload: the server module (and its store) is imported in the master."""
    context = multiprocessing.get_context("fork")
    report = context.Queue()
    task_id = make_record().task_id
    child = context.Process(target=_use_after_fork, name="t-sqlite-forked",
                            args=(store, task_id, id(store._conn), report))
    child.start()
    outcome = report.get(timeout=WAIT)
    child.join(WAIT)
    assert outcome == ("ok", True)
    assert child.exitcode == 0
    done = store.get(task_id)
    assert done is not None and done.result == {"child": child.pid}
    store.create(make_record())  # and the parent's own connection still works


def test_the_running_byte_total_matches_the_records(path):
    """The byte bound reads a total kept by triggers; every kind of write keeps it right."""
    with SqliteTaskStore(path, max_tasks=5, max_bytes=20_000) as store:
        records = [make_record(ttl_ms=1000 if i % 2 else None, status="input_required")
                   for i in range(5)]
        for record in records:
            store.create(record)
        store.answer(records[0].task_id, "alice", {"a": "x" * 3000})
        store.take_responses(records[0].task_id, ["a"])
        store.update(records[1].task_id, status="completed", result={"t": "y" * 5000})
        store.cancel(records[2].task_id, "alice")
        store.create(make_record())  # evicts the first to finish
        store.expire(now=records[3].created_at + 2)
        store.create(make_record(runner=f"{socket.gethostname()}:{os.getpid()}:gone"))
        store.recover()
        with sqlite3.connect(path) as raw:
            total = raw.execute("SELECT bytes FROM totals").fetchone()[0]
            summed = raw.execute("SELECT COALESCE(SUM(size), 0) FROM tasks").fetchone()[0]
        raw.close()
        assert total == summed > 0


def _open_at_once(path: str, barrier: Any, errors: Any) -> None:
    barrier.wait()
    try:
        SqliteTaskStore(path).close()
    except Exception as exc:  # reported to the test, which names it
        errors.put(str(exc))


def test_processes_opening_a_new_file_at_once_all_succeed(tmp_path):
    """gunicorn workers starting together open the same new file at once: SQLite answers
    the loser of the switch to WAL "database is locked" without waiting, which failed a
    worker's boot about one time in ten with six openers (seen in CI). Each must wait."""
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    errors = context.Queue()
    for round_ in range(30):
        path = str(tmp_path / f"tasks-{round_}.db")
        barrier = context.Barrier(6)
        openers = [context.Process(target=_open_at_once, args=(path, barrier, errors))
                   for _ in range(6)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(30)
            assert opener.exitcode == 0
        assert errors.empty(), errors.get()
