"""The watchdog runs each alarm once, at its time, never a cancelled one, and its thread
ends when it has nothing to do."""

from __future__ import annotations

import threading
import time

from mcpsync.threads.watchdog import Watchdog
from tests.helpers import wait_until


def test_alarms_run_in_time_order_once() -> None:
    dog = Watchdog(name="test-watchdog", idle=0.2)
    ran: list[str] = []
    done = threading.Event()
    now = time.monotonic()
    dog.arm(now + 0.10, lambda: ran.append("late"))
    dog.arm(now + 0.02, lambda: ran.append("early"))
    dog.arm(now + 0.15, done.set)
    assert done.wait(5)
    assert ran == ["early", "late"]
    assert dog.pending() == 0


def test_a_cancelled_alarm_never_runs() -> None:
    dog = Watchdog(name="test-watchdog", idle=0.2)
    ran = threading.Event()
    done = threading.Event()
    now = time.monotonic()
    dog.arm(now + 0.05, ran.set).cancel()
    dog.arm(now + 0.10, done.set)
    assert done.wait(5)
    assert not ran.is_set()


def test_an_earlier_alarm_wakes_the_thread() -> None:
    dog = Watchdog(name="test-watchdog", idle=0.2)
    far = dog.arm(time.monotonic() + 60, lambda: None)
    soon = threading.Event()
    started = time.monotonic()
    dog.arm(time.monotonic() + 0.05, soon.set)
    assert soon.wait(5)
    assert time.monotonic() - started < 5
    far.cancel()


def test_many_cancelled_alarms_do_not_pile_up() -> None:
    dog = Watchdog(name="test-watchdog", idle=0.2)
    for _ in range(10_000):
        dog.arm(time.monotonic() + 600, lambda: None).cancel()
    assert dog.pending() == 0
    assert len(dog._heap) < 200  # compacted as it went


def test_a_failing_callback_does_not_stop_the_watchdog() -> None:
    dog = Watchdog(name="test-watchdog", idle=0.2)
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    dog.arm(time.monotonic(), boom)
    dog.arm(time.monotonic() + 0.02, done.set)
    assert done.wait(5)


def test_the_thread_ends_when_idle_and_comes_back() -> None:
    dog = Watchdog(name="test-watchdog-idle", idle=0.05)

    def alive() -> bool:
        return any(t.name == "test-watchdog-idle" for t in threading.enumerate())

    first = threading.Event()
    dog.arm(time.monotonic(), first.set)
    assert first.wait(5)
    wait_until(lambda: not alive(), timeout=5, message="the idle watchdog thread stayed")
    second = threading.Event()
    dog.arm(time.monotonic(), second.set)
    assert second.wait(5)
