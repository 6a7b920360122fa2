"""RedisTaskStore when Redis is killed or stopped (SIGSTOP: it accepts connections and never
answers) in the middle of things: every store call, a ``wait``, a task's runner and a
``tasks/get`` end within a bound with ``StoreUnavailableError`` (or the request's clear
error), never hang; one call's Redis work shares one budget (``call_timeout``), a wait's
shares its ``timeout``; after SIGCONT (or a restart) the store serves again by itself.

The stores here use a client whose connections honour the ambient deadline
(:func:`mcpsync.protocol.deadline.current`) the way ``mcpsync.redis.client``'s own do: the
store's part, tested here, is to put a deadline around every wait of a whole operation and
never multiply one (commands × retries × socket timeout).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from mcpsync.errors import StoreUnavailableError
from mcpsync.protocol.deadline import Deadline, current
from mcpsync.redis.tasks import WAIT_GRACE, RedisTaskStore
from mcpsync.tasks import TaskRecord, runner_id
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import wait_until
from tests.services import RedisServer, require_redis_library
from tests.stores.backends import make_record

#: What a stopped Redis may add past a budget before the call gives up: the client's
#: reaction, a loaded two-core machine. Generous: the defects were 10 s and more.
SLACK = 2.5


class DeadlineConnection(redis.connection.Connection):
    """A connection whose reads end by the ambient deadline as well as by their socket
    timeout (what ``mcpsync.redis.client`` makes its clients do)."""

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        deadline = current()
        sock = self._sock
        if deadline is None or not deadline.bounded or sock is None:
            return super().read_response(*args, **kwargs)
        left = deadline.remaining()
        if left <= 0:
            self.disconnect()
            raise redis.exceptions.TimeoutError(f"{deadline.what}: no time left")
        sock.settimeout(min(left, self.socket_timeout or left))
        try:
            return super().read_response(*args, **kwargs)
        finally:
            if self._sock is sock:
                sock.settimeout(self.socket_timeout)


def deadline_client(url: str) -> redis.Redis:
    """As ``mcpsync.redis.client.connect`` makes one (one quick retry), with a reply
    timeout longer than any budget here, so that only a deadline can end a wait in time."""
    pool = redis.ConnectionPool.from_url(url, connection_class=DeadlineConnection,
                                         socket_connect_timeout=2.0, socket_timeout=8.0,
                                         health_check_interval=15)
    return redis.Redis(connection_pool=pool,
                       retry=Retry(ExponentialBackoff(cap=0.25, base=0.05), 1))


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A Redis of this test's own: it is killed or stopped (and always continued)."""
    require_redis_library()
    with RedisServer() as started:
        try:
            yield started
        finally:
            if started.pid is not None:
                os.kill(started.pid, signal.SIGCONT)


@pytest.fixture
def make_store(server: RedisServer) -> Iterator[Callable[..., RedisTaskStore]]:
    made: list[tuple[RedisTaskStore, redis.Redis]] = []

    def make(**options: Any) -> RedisTaskStore:
        client = deadline_client(server.url)
        store = RedisTaskStore(client, prefix="outage", **options)
        made.append((store, client))
        return store

    yield make
    if server.pid is not None:
        os.kill(server.pid, signal.SIGCONT)
    for store, client in made:
        store.close()
        client.close()


def stop(server: RedisServer) -> None:
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)


def cont(server: RedisServer) -> None:
    assert server.pid is not None
    os.kill(server.pid, signal.SIGCONT)


def timed(call: Callable[[], object]) -> tuple[float, BaseException | None]:
    t0 = time.monotonic()
    try:
        call()
    except BaseException as exc:  # returned to the test, which names what it expects
        return time.monotonic() - t0, exc
    return time.monotonic() - t0, None


def calls(store: RedisTaskStore, record: TaskRecord) -> dict[str, Callable[[], object]]:
    return {
        "create": lambda: store.create(make_record()),
        "get": lambda: store.get(record.task_id),
        "update": lambda: store.update(record.task_id, status_message="x"),
        "cancel": lambda: store.cancel(record.task_id, record.owner),
        "answer": lambda: store.answer(record.task_id, record.owner, {"k": 1}),
        "take_responses": lambda: store.take_responses(record.task_id, ["k"]),
        "list": lambda: store.list(record.owner),
        "expire": lambda: store.expire(),
        "recover": lambda: store.recover(),
    }


@pytest.mark.parametrize("listening", [True, False], ids=["subscribed", "fresh"])
def test_wait_ends_by_its_timeout_when_redis_is_stopped(make_store, server, listening):
    """Before: the listener's wait took the whole timeout and each read 2 × 5 s more."""
    store = make_store()
    record = make_record()
    store.create(record)
    waiter = store if listening else make_store()
    if listening:
        assert store.wait(record.task_id, 99, timeout=0.01) is not None  # subscribed
    stop(server)
    took, error = timed(lambda: waiter.wait(record.task_id, 0, timeout=2.0))
    assert isinstance(error, StoreUnavailableError), error
    assert took < 2.0 + WAIT_GRACE + SLACK
    cont(server)
    again = waiter.wait(record.task_id, 0, timeout=0.2)  # serves again by itself
    assert again == record


def test_each_call_ends_within_its_budget_when_redis_is_stopped(make_store, server):
    """One budget for all of a call's commands and retries (``call_timeout``); before, a
    ``get`` took 15 s and a store made meanwhile 20 s."""
    store = make_store(call_timeout=1.0)
    record = make_record(status="input_required")
    store.create(record)
    stop(server)
    for name, call in calls(store, record).items():
        took, error = timed(call)
        assert isinstance(error, StoreUnavailableError), (name, error)
        assert took < 1.0 + SLACK, name
    took, _ = timed(lambda: make_store(call_timeout=1.0))  # recovery is skipped in time
    assert took < 1.0 + SLACK
    cont(server)
    assert store.get(record.task_id) == record


def test_a_request_deadline_sooner_than_the_call_budget_wins(make_store, server):
    store = make_store()  # call_timeout: the default 10 s
    record = make_record()
    store.create(record)
    stop(server)
    with Deadline(1.0, "a request").applied():
        took, error = timed(lambda: store.get(record.task_id))
    assert isinstance(error, StoreUnavailableError), error
    assert took < 1.0 + SLACK


def test_close_is_bounded_while_a_heartbeat_hangs_on_a_stopped_redis(make_store, server):
    """Before: the heartbeat's pipeline waited 2 × 5 s on the stopped Redis; close joined
    each thread for up to 10 s."""
    store = make_store(heartbeat_ttl=3.0)  # a beat each second
    store.create(make_record(runner=runner_id()))
    assert store.wait("warm-up", 0, timeout=0.01) is None  # the listener runs too
    heart = store._heart
    assert heart is not None
    stop(server)
    wait_until(lambda: _reading(heart), timeout=WAIT,  # a beat waits for its reply
               message="no heartbeat started on the stopped Redis")
    threads = [t for t in (heart, store._listener) if t is not None]
    took, error = timed(store.close)
    assert error is None
    assert took < 1.0 + SLACK
    assert not any(t.is_alive() for t in threads)


def _reading(thread: threading.Thread) -> bool:
    """Whether ``thread`` is waiting for a reply from Redis now."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        if frame.f_code.co_name == "read_response":
            return True
        frame = frame.f_back
    return False


def test_after_sigcont_a_wait_is_woken_by_another_store_again(make_store, server):
    a, b = make_store(), make_store()
    record = make_record()
    a.create(record)
    assert b.wait(record.task_id, 99, timeout=0.01) is not None  # b listens
    stop(server)
    with pytest.raises(StoreUnavailableError):
        b.wait(record.task_id, 0, timeout=0.5)
    cont(server)
    seen: list[TaskRecord | None] = []
    waiter = threading.Thread(target=lambda: seen.append(b.wait(record.task_id, 0, WAIT)),
                              name="t-redis-after-cont")
    waiter.start()
    wait_until(lambda: record.task_id in b._watchers, timeout=WAIT)
    a.cancel(record.task_id, record.owner)
    waiter.join(WAIT)
    assert not waiter.is_alive()
    assert seen[0] is not None and seen[0].status == "cancelled"


# -- a task's runner and tasks/get on a server whose Redis goes away -----------------------


def _task_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcpsync-task-")]


@pytest.mark.parametrize("outage", ["stopped", "killed"])
def test_a_running_task_and_tasks_get_end_when_redis_goes_away(make_store, server, outage,
                                                                monkeypatch):
    from mcpsync.tasks import runner as runner_module
    from tests.tasks.peers import Peer
    from tests.tasks.task_server import make_server

    patience = 3.0
    monkeypatch.setattr(runner_module, "SETTLE_PATIENCE", patience)
    before = set(_task_threads())
    store = make_store(call_timeout=1.5)
    app = make_server(task_store=store)
    peer = Peer("memory", "modern", server=app)
    try:
        task_id = peer.result("tools/call", {"name": "slow",
                                             "arguments": {"seconds": WAIT}})["taskId"]
        wait_until(lambda: (store.get(task_id) or make_record()).status_message
                   == "half way", timeout=WAIT, message="the task never started")
        runners = set(_task_threads()) - before
        assert len(runners) == 1
        t0 = time.monotonic()
        if outage == "stopped":
            stop(server)
        else:
            server.kill()
        answer = peer.request("tasks/get", {"taskId": task_id})
        took = time.monotonic() - t0
        assert "error" in answer, answer  # a failure (over HTTP a 503), not a hang
        assert took < 1.5 + SLACK
        if outage == "stopped":
            # Back within the runner's patience: the task's end is written after all,
            # where it used to stay "working" until its TTL (the runner thread died).
            cont(server)
        # the runner's sleep fails; its outcome is written, or given up after its patience
        for runner in runners:
            runner.join(2 * 1.5 + WAIT_GRACE + patience + SLACK)
            assert not runner.is_alive()
        if outage == "stopped":
            after = peer.result("tasks/get", {"taskId": task_id})  # served again by itself
            assert after["taskId"] == task_id
            assert after["status"] in ("completed", "failed"), after
    finally:
        peer.close()
        if server.pid is not None:
            cont(server)
        app.close_tasks()


# -- batches under the per-call budget ----------------------------------------------------


def test_a_long_sweep_does_not_fail_the_create_that_runs_it(make_store):
    """The sweep a ``create`` runs (once a minute) stops when its share of the call's
    budget is spent and leaves the rest for later; ``expire`` and ``recover`` give each
    batch a budget of its own, so no number of tasks makes them fail on a healthy Redis."""
    store = make_store(call_timeout=0.3, max_tasks=100_000)
    gone = time.time() - 60
    for i in range(1500):
        store.create(make_record(owner=f"gone-{i % 10}", ttl_ms=1000, created_at=gone))
    for i in range(1000):
        store.create(make_record(owner=f"dead-{i % 10}", runner="elsewhere:1:gone",
                                 ttl_ms=None))
    store._last_sweep = 0.0  # a sweep is due
    store.create(make_record())
    assert store.expire() < 1500  # what the create left, if anything
    assert store.expire() == 0
    assert store.recover() == 1000
    assert store.list("gone-0") == ([], None)


def test_a_wait_ends_with_the_request_s_deadline_not_after_it(make_store):
    """A ``wait`` inside a request whose deadline ends sooner than its ``timeout`` returns
    the task as it is when that deadline comes (as a timeout would), leaving time for the
    read that ends it; before, it slept on, past the request's end."""
    store = make_store()
    record = make_record()
    store.create(record)
    with Deadline(2.0 + WAIT_GRACE, "a request").applied():
        took, error = timed(lambda: store.wait(record.task_id, record.version, timeout=WAIT))
        assert error is None, error
        assert took < 2.0 + WAIT_GRACE + SLACK
        # a caller that waits again (tasks/result's loop) is told the budget is spent,
        # at once: no spinning through the last second's reads
        later, error = timed(lambda: store.wait(record.task_id, record.version,
                                                 timeout=WAIT))
    assert isinstance(error, StoreUnavailableError), error
    assert "a request" in str(error)
    assert later < SLACK
