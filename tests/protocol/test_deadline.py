"""Deadline: what is left, caps, parts of an operation, and the ambient scope."""

from __future__ import annotations

import math
import threading

import pytest
from freezegun import freeze_time

from mcpsync import Deadline, DeadlineExceeded
from mcpsync.protocol.deadline import current


def test_what_is_left_runs_down_with_the_clock() -> None:
    with freeze_time("2026-12-05 08:00:00") as clock:
        deadline = Deadline(10, "fetching the key set")
        assert deadline.remaining() == pytest.approx(10)
        assert deadline.cap(3) == 3 and deadline.cap(None) == pytest.approx(10)
        clock.tick(8)
        assert deadline.remaining() == pytest.approx(2)
        assert deadline.cap(3) == pytest.approx(2)
        deadline.check()
        clock.tick(3)
        assert deadline.expired() and deadline.remaining() == 0
        with pytest.raises(DeadlineExceeded, match="fetching the key set: its time budget "
                                                   "of 10 s ran out") as caught:
            deadline.check()
        assert isinstance(caught.value, TimeoutError)
        assert caught.value.what == "fetching the key set" and caught.value.budget == 10


def test_a_deadline_that_never_ends() -> None:
    never = Deadline.never()
    assert not never.bounded and never.remaining() == math.inf
    assert never.cap(None) is None and never.cap(5) == 5
    assert not never.expired()


def test_a_part_never_outlives_the_whole() -> None:
    with freeze_time("2026-12-05 08:00:00"):
        whole = Deadline(5, "discovery")
        assert whole.within(60, "one URL").at == whole.at
        part = whole.within(1, "one URL")
        assert part.at < whole.at and part.what == "one URL"
        assert Deadline.never().within(2).remaining() == pytest.approx(2)


def test_the_ambient_deadline_is_per_block_and_per_thread() -> None:
    assert current() is None
    outer = Deadline(1, "outer")
    seen: list[object] = []
    with outer.applied() as applied:
        assert applied is outer and current() is outer
        with Deadline(60, "looser").applied() as inner:
            assert inner is outer  # a block never gets more time than the code around it
        with Deadline(0.5, "tighter").applied() as inner:
            assert inner.what == "tighter" and current() is inner
        assert current() is outer
        thread = threading.Thread(target=lambda: seen.append(current()), name="t-ambient")
        thread.start()
        thread.join(5)
    assert seen == [None]
    assert current() is None
