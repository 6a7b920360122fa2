"""The store budget itself: what it charges, and the budgeted redis-py connections against
a server that trickles its reply (a per-read timeout never fires on it)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from freezegun import freeze_time

from mcpsync.errors import StoreUnavailableError
from mcpsync.protocol.budget import Budget, current_budget
from mcpsync.protocol.deadline import current
from tests.helpers import WAIT
from tests.services import require_redis_library


def test_only_the_waits_are_charged():
    # A frozen clock: the work and the wait take exactly the time the test says.
    with freeze_time("2026-01-01") as clock:
        budget = Budget(5.0, "work")
        with budget.scope():
            assert current_budget() is budget and current() is None
            clock.tick(1.0)  # the request's own work (a handler): not charged
            with budget.spend() as deadline:
                assert current() is deadline and deadline.remaining() == 5.0
                clock.tick(0.5)  # a wait on the dependency: charged
                assert deadline.remaining() == 4.5
            assert current() is None
            clock.tick(1.0)  # more work: not charged
        assert budget.left == 4.5
    assert budget.closed and current_budget() is None


def test_a_spent_budget_gives_an_expired_deadline_and_never_goes_negative():
    with freeze_time("2026-01-01") as clock:
        budget = Budget(0.01, "tiny")
        with budget.spend():
            clock.tick(0.03)  # the wait outlasts the budget
    assert budget.spent_out and budget.left == 0.0
    with budget.spend() as deadline:
        assert deadline.expired()
    assert "0.01 s in all" in budget.describe()
    with pytest.raises(ValueError):
        Budget(-1, "negative")


def test_an_unbounded_budget_never_ends_and_an_outer_deadline_stays():
    from mcpsync.protocol.deadline import Deadline

    budget = Budget(None, "free")
    with budget.spend() as deadline:
        assert not deadline.bounded
    outer = Deadline(0.5, "outer")
    with outer.applied(), Budget(10, "inner").spend() as deadline:
        assert deadline is outer  # the sooner one stays in force


def test_another_thread_joins_until_the_scope_ends():
    budget = Budget(5.0, "shared")
    seen: list[Budget | None] = []

    def joined() -> None:
        with budget.applied():
            seen.append(current_budget())

    with budget.scope():
        thread = threading.Thread(target=joined, name="test-budget-joiner")
        thread.start()
        thread.join(5)
    assert seen == [budget] and budget.closed


def test_a_lent_budget_applies_on_a_helper_thread_only_while_its_owner_waits():
    # A handler thread storing the events a request waits for spends that request's
    # budget (HttpSession._store); once the request has answered, nothing is lent, and
    # on the owner's own thread the budget is already in force.
    budget = Budget(5.0, "lent")
    seen: list[Budget | None] = []

    def helper() -> None:
        with budget.lent():
            seen.append(current_budget())

    def run_helper() -> None:
        thread = threading.Thread(target=helper, name="test-budget-lender")
        thread.start()
        thread.join(WAIT)
        assert not thread.is_alive()

    with budget.scope():
        run_helper()
        with budget.lent():  # the owner's thread: the same budget, nothing more
            assert current_budget() is budget
    run_helper()  # the owner has answered: the helper waits by its own bounds
    assert seen == [budget, None] and budget.closed


# -- the budgeted connections ------------------------------------------------------------


class Trickler:
    """A TCP server on loopback that answers every connection with a reply that never
    ends, one byte every 0.2 s (so no read waits long enough to time out)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, name="test-trickler-accept")
        accept.start()
        self.threads.append(accept)

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._trickle, args=(conn,),
                                      name="test-trickler-conn")
            thread.start()
            self.threads.append(thread)

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"+")
                while not self.stop.wait(0.2):
                    conn.sendall(b"P")
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def trickler() -> Iterator[Trickler]:
    require_redis_library()
    server = Trickler()
    try:
        yield server
    finally:
        server.close()


def test_a_trickled_reply_is_cut_off_by_the_budget(trickler):
    """Each read gets a byte well within the 5 s socket timeout, so a per-read timeout
    alone would wait for ever: every recv is capped by what is left of the budget."""
    from mcpsync.redis import connect
    from mcpsync.redis.client import unavailable

    client = connect(f"redis://127.0.0.1:{trickler.port}/0")
    try:
        began = time.monotonic()
        with Budget(1.0, "the trickle test").applied(), pytest.raises(
                StoreUnavailableError, match="the trickle test"), unavailable(
                client, "a PING"):
            client.ping()
        assert time.monotonic() - began < WAIT / 2  # the bug: for ever
    finally:
        client.close()


def test_install_leaves_a_connection_class_of_its_own_alone():
    require_redis_library()
    import redis

    from mcpsync.redis.budget import BudgetedConnection, install

    class Custom(redis.Connection):
        pass

    mine = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=Custom))
    assert not install(mine) and mine.connection_pool.connection_class is Custom
    stock = redis.Redis(host="127.0.0.1")
    assert install(stock) and install(stock)  # idempotent
    assert issubclass(stock.connection_pool.connection_class, BudgetedConnection)
    assert issubclass(stock.connection_pool.connection_class, redis.Connection)
