"""The write side of a stream transport over a real pipe: writes by a deadline, whole
messages from concurrent writers (the bridge writes stdout from two threads), and a close
that frees a write waiting for room.

A time a test asserts is never within a second of what the bug would take: a deadline's
lower bound is the deadline itself (a pass never ends before it); the upper bounds are
half of ``WAIT`` where the bug is a wait of ``WAIT`` or more (the write bound raised to
it where the bug would be to wait out the write bound)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from mcpsync import ConnectionClosedError
from mcpsync.protocol.deadline import Deadline, DeadlineExceeded
from mcpsync.protocol.jsonrpc import Notification, Request
from mcpsync.transports.stream import StreamTransport
from tests.helpers import WAIT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="pipe sizes and FIONREAD as on Linux")


@pytest.fixture
def pipe() -> Iterator[tuple[StreamTransport, int, int]]:
    """A transport writing into a pipe nobody reads yet: (transport, read end, write end)."""
    read_end, write_end = os.pipe()
    inbound_r, inbound_w = os.pipe()
    transport = StreamTransport(inbound_r, os.fdopen(write_end, "wb", buffering=0, closefd=False))
    yield transport, read_end, write_end
    transport.close()
    for fd in (read_end, write_end, inbound_r, inbound_w):
        os.close(fd)


def drain(fd: int, until: int) -> bytes:
    os.set_blocking(fd, True)
    data = b""
    while len(data) < until:
        data += os.read(fd, 1 << 20)
    return data


def test_concurrent_writers_never_interleave_their_messages(pipe):
    transport, read_end, _ = pipe
    messages = [Notification("notifications/big", {"who": who, "pad": who * 200_000})
                for who in "ab"]
    threads = [threading.Thread(target=transport.send, args=(message,), name=f"test-{i}")
               for i, message in enumerate(messages)]
    for thread in threads:
        thread.start()
    data = drain(read_end, 2 * 200_000)
    while data.count(b"\n") < 2:
        data += os.read(read_end, 1 << 20)
    for thread in threads:
        thread.join(WAIT)
    lines = data.split(b"\n")[:2]
    assert sorted(json.loads(line)["params"]["who"] for line in lines) == ["a", "b"]


def test_a_call_nothing_of_which_fits_fails_by_its_deadline_and_the_stream_lives(pipe):
    if os.sysconf("SC_PAGE_SIZE") != 4096:
        pytest.skip("counts on 4 KiB pipe buffers")
    transport, read_end, _ = pipe
    # Fill the pipe with messages under PIPE_BUF: each goes in whole or not at all.
    filler = Notification("notifications/pad", {"pad": "p" * 3900})
    for _ in range(10_000):
        try:
            transport.send_call(filler, Deadline(0.2))
        except DeadlineExceeded:
            break
    transport.write_timeout = 2 * WAIT  # not the bound of a call with a deadline
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        transport.send_call(Request(1, "tools/call", {"pad": "q" * 500}), Deadline(1.0))
    assert 0.95 < time.monotonic() - started < WAIT / 2
    assert transport.stalled is None
    data = os.read(read_end, 1 << 20)  # the peer reads again: the stream still works
    assert all(json.loads(line)["method"] == "notifications/pad"
               for line in data.split(b"\n") if line)
    transport.send(Notification("notifications/after", {}))
    assert b"notifications/after" in os.read(read_end, 1 << 20)


def test_a_write_without_deadline_ends_the_stream_after_write_timeout(pipe):
    transport, _, _ = pipe
    transport.write_timeout = 0.5
    outcome: list[BaseException] = []

    def write() -> None:
        try:
            transport.send(Notification("notifications/big", {"pad": "x" * 300_000}))
        except BaseException as exc:
            outcome.append(exc)

    started = time.monotonic()
    writer = threading.Thread(target=write, name="test-writer")
    writer.start()
    writer.join(WAIT)
    assert not writer.is_alive(), "the write is still blocked"
    assert 0.45 < time.monotonic() - started < WAIT / 2
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionClosedError)
    assert "stopped reading" in str(outcome[0])
    assert transport.stalled is not None and "0.5 s" in transport.stalled
    # The reader side says why too, and later writes fail at once.
    with pytest.raises(ConnectionClosedError, match="stopped reading"):
        transport.receive()
    with pytest.raises(ConnectionClosedError, match="stopped reading"):
        transport.send(Notification("notifications/after", {}))


def test_close_frees_a_write_waiting_for_room_and_gives_the_descriptor_back_blocking(pipe):
    transport, read_end, write_end = pipe
    assert not os.get_blocking(write_end)
    transport.write_timeout = 2 * WAIT  # the bug: the write waits this out, not the close
    outcome: list[BaseException] = []

    def write() -> None:
        try:
            transport.send(Notification("notifications/big", {"pad": "x" * 300_000}))
        except BaseException as exc:
            outcome.append(exc)

    writer = threading.Thread(target=write, name="test-writer")
    writer.start()
    _wait_until_full(read_end)  # the writer now waits in poll() for room
    started = time.monotonic()
    transport.close()
    writer.join(WAIT)
    assert not writer.is_alive(), "the close did not free the write"
    assert time.monotonic() - started < WAIT / 2
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionClosedError)
    assert os.get_blocking(write_end)


def _wait_until_full(read_end: int) -> None:
    """Until the pipe holds all it can (no event says so: its fill level is checked every
    5 ms, for at most WAIT seconds)."""
    import fcntl
    import termios

    size = fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ)
    tick = threading.Event()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        waiting = bytearray(4)
        fcntl.ioctl(read_end, termios.FIONREAD, waiting)
        if int.from_bytes(waiting, sys.byteorder) >= size:
            return
        tick.wait(0.005)
    pytest.fail("the pipe never filled")
