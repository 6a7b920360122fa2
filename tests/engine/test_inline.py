"""Requests run on the reader thread (mcpsync/engine/inline.py): the policy, displacement,
its bound, and that every thread it starts is named and joined."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from mcpsync.engine.connection import Connection, ConnectionLimits
from mcpsync.engine.hooks import ConnectionThreads
from mcpsync.engine.inline import (
    FIRST_RETRY_AFTER,
    RETRY_AFTER_QUICK,
    SLOW_RUN,
    InlinePolicy,
)
from mcpsync.engine.requests import InboundRequest
from mcpsync.transports.memory import memory_pair
from tests.helpers import WAIT, wait_until


def test_a_key_is_inline_until_slow_then_again_after_quick_pool_runs() -> None:
    policy = InlinePolicy()
    assert policy.inline("echo")
    policy.ran("echo", SLOW_RUN / 2)
    assert policy.inline("echo") and policy.slow_keys == 0
    policy.ran("block", SLOW_RUN * 2)  # long, but the watch let it finish: not slow
    assert not policy.is_slow("block")
    policy.stalled("block")  # displaced: slow
    assert policy.is_slow("block")
    for _ in range(3 * RETRY_AFTER_QUICK):  # a blocking tool stays on the pool
        assert not policy.inline("block")
        policy.pooled("block", SLOW_RUN * 10)
    for _ in range(RETRY_AFTER_QUICK - 1):
        policy.pooled("block", SLOW_RUN / 2)
    policy.pooled("block", SLOW_RUN * 10)  # one slow run restarts the count
    for _ in range(RETRY_AFTER_QUICK):
        assert not policy.inline("block")
        policy.pooled("block", SLOW_RUN / 2)
    assert policy.inline("block")  # quick on the pool long enough: tried inline again
    assert not policy.inline("block")  # ... once, until that try is reported
    policy.ran("block", 0.0)
    assert policy.inline("block") and policy.slow_keys == 0


def test_a_slow_key_is_tried_again_after_a_doubling_number_of_pool_runs() -> None:
    policy = InlinePolicy()
    policy.stalled("block")
    for interval in (FIRST_RETRY_AFTER, 2 * FIRST_RETRY_AFTER, 4 * FIRST_RETRY_AFTER):
        decisions = [policy.inline("block") for _ in range(interval)]
        assert decisions == [False] * (interval - 1) + [True]
        policy.stalled("block")  # still slow (displaced)


def test_a_full_slow_table_sends_unknown_keys_to_the_pool() -> None:
    policy = InlinePolicy(max_keys=2)
    policy.stalled("a")
    policy.stalled("b")
    assert policy.inline("c")
    policy.stalled("c")  # cannot be remembered: stop trying unknown keys inline
    assert not policy.inline("d")
    assert policy.slow_keys == 2


class Served:
    """A client connection ``a`` and a server connection ``b`` that runs ``handler``
    inline (one key per method)."""

    def __init__(self, handler: Any, *, max_handlers: int = 64) -> None:
        ta, tb = memory_pair()
        self.a = Connection(ta, on_request=lambda r: {}, name="a").start()
        self.b = Connection(tb, on_request=handler, name="b",
                            limits=ConnectionLimits(max_handlers=max_handlers),
                            threads=ConnectionThreads(
                                inline_key=lambda method, params: method)).start()

    def call(self, method: str) -> Future[dict[str, Any]]:
        return self.a.begin_request(method)[1]

    def close(self) -> None:
        self.a.close()
        self.b.close()


def _threads(prefix: str) -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(prefix))


def test_quick_requests_run_on_the_reader_and_a_blocking_one_is_displaced() -> None:
    release = threading.Event()
    ran_on: dict[str, str] = {}

    def handler(r: InboundRequest) -> dict[str, Any]:
        ran_on[r.method] = threading.current_thread().name
        if r.method == "block" and r.params == {} and ran_on.get("warm") == "done":
            assert release.wait(WAIT)
        return {}

    served = Served(handler)
    try:
        assert served.a.request("block") == {}  # quick the first time: runs inline
        assert ran_on["block"] == "b-reader"
        ran_on["warm"] = "done"
        blocked = served.call("block")
        # Reading goes on: another reader thread takes over.
        assert served.a.request("echo", timeout=WAIT) == {}
        assert ran_on["echo"] == "b-reader-2"
        assert ran_on["block"] == "b-reader"
        assert not blocked.done()
        release.set()
        assert blocked.result(WAIT) == {}
        wait_until(lambda: _threads("b-reader") == ["b-reader-2"], timeout=WAIT,
                   message=lambda: _threads("b-"))
        assert served.b.inflight_count == 0
    finally:
        release.set()
        served.close()
    assert _threads("b-") == [], "every reader, the watch thread and the pool are joined"


def test_displaced_readers_are_bounded_by_the_handler_cap() -> None:
    release = threading.Event()
    warm = threading.Event()

    def handler(r: InboundRequest) -> dict[str, Any]:
        if warm.is_set() and r.method.startswith("block"):
            assert release.wait(WAIT)
        return {}

    served = Served(handler, max_handlers=1)
    try:
        for method in ("block1", "block2", "echo"):
            assert served.a.request(method) == {}
        warm.set()
        first = served.call("block1")
        wait_until(lambda: served.b._readers is not None and served.b._readers.displaced == 1,
                   timeout=WAIT)
        second = served.call("block2")  # runs inline on b-reader-2, which can not be displaced
        echo = served.call("echo")
        assert not echo.done() and not first.done() and not second.done()
        wait_until(lambda: "b-reader-2" in _threads("b-reader"), timeout=WAIT)
        # At the cap, reading waits for the stalled run (as for a full pool).
        assert _threads("b-reader") == ["b-reader", "b-reader-2"]
        release.set()
        for future in (first, second, echo):
            assert future.result(WAIT) == {}
    finally:
        release.set()
        served.close()
    assert _threads("b-") == []
