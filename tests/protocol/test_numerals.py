"""Decimal numbers in hostile header values and SSE fields: a bad one is "absent"."""

from __future__ import annotations

import pytest

from mcpsync.protocol.decoding import parse_decimal
from mcpsync.protocol.sse import SseParser


@pytest.mark.parametrize("text", ["", "²", "-1", "+5", " 7", "1_0", "٣", "9" * 19, "9" * 5000])
def test_anything_but_plain_ascii_digits_is_none(text):
    assert parse_decimal(text) is None


def test_plain_digits_up_to_the_bound():
    assert parse_decimal("0") == 0
    assert parse_decimal("9" * 18) == 10**18 - 1
    assert parse_decimal("1234", max_digits=3) is None


@pytest.mark.parametrize("retry", ["²", "9" * 5000, "-1"])
def test_an_sse_retry_that_is_not_a_number_is_ignored(retry):
    # "retry: ²" used to raise ValueError out of the client's SSE parser.
    parser = SseParser()
    events = parser.feed(f"retry: {retry}\ndata: x\n\n".encode())
    assert [e.data for e in events] == ["x"] and parser.retry_ms is None
