"""mcpsync.protocol.sse, sans-IO: the WHATWG event-stream rules MCP relies on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsync.protocol.sse import KEEPALIVE, Event, SseParser, encode_comment, encode_event


def parse(*chunks: bytes, **options: int) -> list[Event]:
    parser = SseParser(**options)
    events: list[Event] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(newline):
    stream = newline.join([b"event: message", b"id: 7", b"data: {\"a\":1}", b"", b""])
    assert parse(stream) == [Event('{"a":1}', "message", "7", None)]


def test_mixed_line_endings_in_one_stream():
    events = parse(b"data: one\r\n\ndata: two\r\rdata: three\n\r\n")
    assert [e.data for e in events] == ["one", "two", "three"]


def test_crlf_split_between_cr_and_lf_is_one_line_ending():
    # A trailing CR may be half of CRLF: it must not end an extra (blank) line.
    events = parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert [e.data for e in events] == ["a\nb"]


def test_comments_are_ignored():
    assert parse(KEEPALIVE, encode_comment("ping"), b": x\ndata: y\n\n") == [Event("y")]
    assert parse(KEEPALIVE * 3) == []


def test_multi_line_data_joined_with_lf():
    assert parse(b"data: line1\ndata: line2\ndata\ndata:  two spaces\n\n") == [
        Event("line1\nline2\n\n two spaces")]


def test_only_one_leading_space_is_dropped_and_colonless_fields():
    assert parse(b"data:no-space\n\n")[0].data == "no-space"
    assert parse(b"data:   three\n\n")[0].data == "  three"
    assert parse(b"data\n\n")[0].data == ""  # a field name alone: empty value


def test_id_and_retry_persist():
    parser = SseParser()
    assert parser.feed(b"id: e1\nretry: 2500\ndata: x\n\n") == [Event("x", "message", "e1", 2500)]
    assert parser.last_event_id == "e1" and parser.retry_ms == 2500
    # The last id carries over to later events without an id of their own.
    assert parser.feed(b"data: y\n\n") == [Event("y", "message", "e1", 2500)]
    # A non-numeric retry is ignored; an id containing NUL is ignored.
    parser.feed(b"retry: soon\nid: bad\0id\ndata: z\n\n")
    assert parser.retry_ms == 2500 and parser.last_event_id == "e1"


def test_event_without_data_is_not_dispatched_but_its_id_and_retry_count():
    parser = SseParser()
    assert parser.feed(b"id: p1\nretry: 10\n\n") == []
    assert parser.last_event_id == "p1" and parser.retry_ms == 10


def test_priming_event_with_empty_data():
    # What the server sends first on a resumable stream: an id, a retry, empty data.
    raw = encode_event(b"", id="k_1", retry_ms=1000)
    assert raw == b"id: k_1\nretry: 1000\ndata:\n\n"
    parser = SseParser()
    assert parser.feed(raw) == [Event("", "message", "k_1", 1000)]
    assert parser.last_event_id == "k_1"


def test_named_events_and_unknown_fields():
    events = parse(b"event: endpoint\ndata: /messages?session_id=abc\nfoo: bar\n\n"
                   b"data: after\n\n")
    assert events == [Event("/messages?session_id=abc", "endpoint"), Event("after")]


def test_leading_bom_is_stripped():
    assert parse(b"\xef\xbb\xbfdata: x\n\n") == [Event("x")]
    assert parse(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [Event("x")]  # split BOM
    # Only a leading BOM: later, it is part of a field name (an unknown field).
    assert parse(b"\xef\xbb\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\n") == [Event("x")]


def test_utf8_split_inside_a_character():
    raw = "data: Hello, 世界\n\n".encode()
    cut = raw.index("世".encode()) + 1
    assert parse(raw[:cut], raw[cut:]) == [Event("Hello, 世界")]


def test_size_limit():
    parse(b"data: " + b"x" * 100 + b"\n\n", max_event_bytes=100)  # exactly at the limit
    with pytest.raises(ValueError):
        parse(b"data: " + b"x" * 101 + b"\n\n", max_event_bytes=100)
    with pytest.raises(ValueError):  # several lines add up
        parse(b"data: " + b"x" * 60 + b"\ndata: " + b"x" * 60 + b"\n\n", max_event_bytes=100)
    with pytest.raises(ValueError):  # an unterminated line counts too
        parse(b"data: " + b"x" * 200, max_event_bytes=100)
    # The limit is per event: many small events are fine.
    assert len(parse(b"data: 0123456789\n\n" * 50, max_event_bytes=20)) == 50


def test_encode_rejects_line_breaks_in_fields_and_splits_data_lines():
    with pytest.raises(ValueError):
        encode_event("x", id="a\nb")
    with pytest.raises(ValueError):
        encode_event("x", event="a\rb")
    assert encode_event("a\r\nb\rc\nd", event="message") == (
        b"event: message\ndata: a\ndata: b\ndata: c\ndata: d\n\n")


# -- the split-anywhere property -----------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_field = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0"),
                 max_size=12)
_events = st.lists(st.tuples(_text, st.one_of(st.none(), _field),
                             st.one_of(st.none(), _field.filter(lambda s: s != "")),
                             st.one_of(st.none(), st.integers(0, 10**6))),
                   min_size=1, max_size=6)


def _expected(data: str) -> str:
    return data.replace("\r\n", "\n").replace("\r", "\n")


@settings(max_examples=300, deadline=None)
@given(_events, st.sampled_from([b"", b"\xef\xbb\xbf"]), st.data())
def test_split_anywhere_gives_the_same_events(events, bom, data):
    stream = bom + b"".join(
        encode_comment("keep-alive") + encode_event(body, id=event_id, event=name,
                                                    retry_ms=retry)
        for body, event_id, name, retry in events)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    whole = parse(stream)
    assert parse(*chunks) == whole
    assert parse(*[stream[i:i + 1] for i in range(len(stream))]) == whole  # byte by byte
    last_id = None
    last_retry = None
    for got, (body, event_id, name, retry) in zip(whole, events, strict=True):
        last_id = event_id if event_id is not None else last_id
        last_retry = retry if retry is not None else last_retry
        assert (got.data, got.event, got.retry_ms) == (_expected(body), name or "message",
                                                       last_retry)
        assert (got.id or None) == (last_id or None)  # an empty id resets the last id
