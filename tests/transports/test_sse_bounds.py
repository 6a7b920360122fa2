"""SseParser is linear in the bytes fed and bounds each line and event (16 MiB by default),
so a stream that never ends a line costs neither quadratic CPU nor unbounded memory."""

from __future__ import annotations

import time

import pytest

from mcpsync.protocol.sse import SseParser

MiB = 1024 * 1024
CHUNK = b"x" * 65536


def test_an_unterminated_line_is_linear():
    parser = SseParser(max_event_bytes=64 * MiB)
    started = time.process_time()
    parser.feed(b"data: ")
    for _ in range(32 * MiB // len(CHUNK)):
        assert parser.feed(CHUNK) == []
    events = parser.feed(b"\n\n")
    spent = time.process_time() - started
    assert len(events) == 1 and len(events[0].data) == 32 * MiB
    # Linear: a copy or two of 32 MiB. The quadratic parser spent ~8 s of CPU here.
    assert spent < 2.0, f"{spent:.2f} s of CPU for 32 MiB"


def test_many_small_events_split_anywhere_are_linear():
    stream = b"".join(b"id: %d\ndata: {\"n\": %d}\n\n" % (i, i) for i in range(50_000))
    parser = SseParser()
    started = time.process_time()
    events = []
    for offset in range(0, len(stream), 7):
        events.extend(parser.feed(stream[offset:offset + 7]))
    assert time.process_time() - started < 5.0
    assert len(events) == 50_000 and events[-1].id == "49999"


def test_a_line_longer_than_the_bound_fails_before_it_ends():
    parser = SseParser()  # the default bound: 16 MiB, like a stdio line
    parser.feed(b"data: ")
    with pytest.raises(ValueError, match="larger than 16777216 bytes"):
        for _ in range(17 * MiB // len(CHUNK) + 1):
            parser.feed(CHUNK)


def test_an_event_of_many_lines_is_bounded_too():
    parser = SseParser(max_event_bytes=MiB)
    line = b"data: " + b"y" * 1000 + b"\n"
    with pytest.raises(ValueError, match="larger than"):
        for _ in range(2000):
            parser.feed(line)


def test_the_bound_admits_an_event_of_exactly_its_size():
    parser = SseParser(max_event_bytes=1000)
    events = parser.feed(b"data: " + b"z" * 994 + b"\n\n")
    assert len(events) == 1 and len(events[0].data) == 994
