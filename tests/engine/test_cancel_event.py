"""CancelEvent: an Event whose Condition is made by the first wait (engine/connection.py)."""

from __future__ import annotations

import threading

from mcpsync.engine.requests import CancelEvent
from tests.helpers import WAIT


def test_it_is_an_event_that_runs_callbacks_once() -> None:
    event = CancelEvent()
    assert isinstance(event, threading.Event)
    calls: list[str] = []
    event.add_callback(lambda: calls.append("first"))
    assert not event.is_set() and not event.wait(0)
    event.set()
    event.set()
    assert event.is_set() and event.wait(0) and event.wait()
    assert calls == ["first"]
    event.add_callback(lambda: calls.append("late"))  # already set: runs at once
    assert calls == ["first", "late"]
    event.clear()
    assert not event.is_set()


def test_a_waiter_on_another_thread_is_woken_by_set() -> None:
    for _ in range(200):  # the set can land before, during or after the first wait
        event = CancelEvent()
        woke = threading.Event()

        def wait(event: CancelEvent = event, woke: threading.Event = woke) -> None:
            if event.wait(WAIT):
                woke.set()

        waiter = threading.Thread(target=wait, name="cancel-event-waiter")
        waiter.start()
        event.set()
        assert woke.wait(WAIT), "a wait() missed the set()"
        waiter.join(WAIT)


def test_a_failing_callback_does_not_stop_the_others() -> None:
    event = CancelEvent()
    calls: list[int] = []

    def boom() -> None:
        raise RuntimeError("callback failed")

    event.add_callback(boom)
    event.add_callback(lambda: calls.append(1))
    event.set()
    assert calls == [1]
