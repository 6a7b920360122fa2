from hypothesis import given
from hypothesis import strategies as st

from mcpsync.protocol.decoding import OVERSIZED, LineDecoder


def test_lines_split_across_chunks():
    d = LineDecoder()
    assert d.feed(b'{"a"') == []
    assert d.feed(b':1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert d.feed(b":3}\r\n") == [b'{"c":3}']
    assert d.finish() == []


def test_blank_lines_are_skipped_and_last_line_counts_at_eof():
    d = LineDecoder()
    assert d.feed(b"\n\n  \nabc") == []
    assert d.finish() == [b"abc"]


def test_oversized_line_is_dropped_without_buffering_and_stream_resyncs():
    d = LineDecoder(max_line_bytes=10)
    out = d.feed(b"x" * 8)
    out += d.feed(b"x" * 8)  # crosses the limit: marker now, bytes dropped
    assert out == [OVERSIZED]
    assert len(d._buffer) == 0
    assert d.feed(b"y" * 1000) == []  # still discarding, nothing kept
    assert len(d._buffer) == 0
    assert d.feed(b"zz\nok\n") == [b"ok"]


def test_oversized_complete_line_in_one_chunk():
    d = LineDecoder(max_line_bytes=4)
    assert d.feed(b"12345\n12\n") == [OVERSIZED, b"12"]


@given(st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b and b.strip()
                                                          and not b.endswith(b"\r")),
                max_size=20),
       st.lists(st.integers(min_value=1, max_value=17), min_size=1))
def test_any_chunking_gives_the_same_lines(lines, cuts):
    stream = b"".join(line + b"\n" for line in lines)
    d = LineDecoder()
    out = []
    pos = 0
    i = 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        out += d.feed(stream[pos:pos + step])
        pos += step
        i += 1
    out += d.finish()
    assert out == lines
