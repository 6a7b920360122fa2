"""A stdio client's caller reads its own answer (engine/reading.py): against a raw server
that writes exactly the bytes each case needs, every message read on the way still reaches
its handler, nothing waits unread once calls stop, and a timeout, a dying server, a
question from the server and Ctrl-C behave as through the reader thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcpsync import (
    Client,
    ConnectionClosedError,
    HostHandlers,
    RequestTimeoutError,
    Root,
    ServerExitedError,
)
from mcpsync.engine.reading import GRACE
from mcpsync.transports.stream import StreamTransport
from tests.helpers import WAIT, run_threads, wait_until

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, str(Path(__file__).with_name("lending_server.py"))]


def lent(client: Client) -> int:
    """Calls that read their own answer so far."""
    role = client._connection._role
    assert role is not None, "a stdio client lends its stream to callers"
    return role.lent


class Logs:
    """Log messages as they arrive, with an Event per expected text."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.texts: list[str] = []
        self.changed = threading.Condition(self.lock)

    def __call__(self, message) -> None:
        with self.lock:
            self.texts.append(message.data)
            self.changed.notify_all()

    def wait_for(self, text: str, timeout: float = WAIT) -> float:
        """Block until ``text`` arrived; return when (``time.monotonic()``)."""
        with self.lock:
            assert self.changed.wait_for(lambda: text in self.texts, timeout), self.texts
        return time.monotonic()


def test_calls_in_a_row_read_their_own_answers():
    with Client.stdio(SERVER, timeout=WAIT) as client:
        before = lent(client)
        for i in range(200):
            assert client.call_tool("echo", {"text": str(i)}).text == str(i)
        # The reader thread may take the stream back once per grace (a slow CI machine
        # can pause the loop that long): most calls, not all, read their own answer.
        assert lent(client) - before >= 100


def test_a_notification_read_with_the_answer_is_delivered_at_once():
    logs = Logs()
    with Client.stdio(SERVER, timeout=WAIT, on_log=logs) as client:
        client.call_tool("echo", {"text": "warm"})  # the reader thread lends from here
        before = lent(client)
        assert client.call_tool("nudge_same", {"text": "one"}).text == "one"
        assert lent(client) == before + 1
        # It came in the same read as the answer: the caller left it buffered, so the
        # reader thread took the stream back at once rather than after a grace.
        logs.wait_for("after one")


def test_a_message_that_arrives_between_calls_is_read_without_another_call():
    logs = Logs()
    with Client.stdio(SERVER, timeout=WAIT, on_log=logs) as client:
        client.call_tool("echo", {"text": "warm"})
        client.call_tool("nudge_after", {"text": "two"})
        answered = time.monotonic()
        arrived = logs.wait_for("after two")
        # Written 50 ms after the answer; read within two graces of it at most, plus
        # scheduling (the bound only shows that nobody had to call again for it).
        assert arrived - answered < 0.05 + 2 * GRACE + 2.0


def test_the_servers_question_during_a_call_is_answered():
    with Client.stdio(SERVER, timeout=WAIT,
                      host=HostHandlers(roots=[Root("file:///r1"), Root("file:///r2")])) as c:
        c.call_tool("echo", {"text": "warm"})
        before = lent(c)
        assert c.call_tool("ask").text == "2"
        assert lent(c) == before + 1


def test_progress_read_by_the_caller_is_seen_before_the_call_returns():
    seen: list[float] = []
    with Client.stdio(SERVER, timeout=WAIT) as client:
        client.call_tool("echo", {"text": "warm"})
        before = lent(client)
        result = client.call_tool("steps", on_progress=lambda p: seen.append(p.progress))
        assert result.text == "stepped"
        assert seen == [1, 2, 3]
        assert lent(client) == before + 1


def test_a_timeout_while_reading_raises_on_time_and_the_client_stays_usable():
    with Client.stdio(SERVER, timeout=WAIT) as client:
        client.call_tool("echo", {"text": "warm"})
        before = lent(client)
        began = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            client.call_tool("silent", timeout=0.3)
        assert time.monotonic() - began < 0.3 + 2.0
        assert lent(client) == before + 1
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_server_that_dies_while_the_caller_reads_says_how_it_ended():
    with Client.stdio(SERVER, timeout=WAIT) as client:
        client.call_tool("echo", {"text": "warm"})
        with pytest.raises(ServerExitedError) as caught:
            client.call_tool("die")
        assert caught.value.returncode == 3
        assert "dying on purpose" in caught.value.stderr_tail
        assert client._connection.wait_closed(WAIT)
        with pytest.raises(ServerExitedError):
            client.call_tool("echo", {"text": "gone"})


def test_eight_threads_share_the_stream_and_every_answer_reaches_its_caller():
    with Client.stdio(SERVER, timeout=WAIT) as client:
        def work(n: int) -> list[str]:
            return [client.call_tool("echo", {"text": f"{n}-{i}"}).text for i in range(50)]

        results = run_threads(work, 8, name="t-lend", timeout=WAIT * 3)
        assert results == [[f"{n}-{i}" for i in range(50)] for n in range(8)]


def test_ctrl_c_while_the_caller_reads_leaves_the_stream_whole(tmp_path):
    marker = tmp_path / "started"
    reading = tmp_path / "reading"
    script = tmp_path / "caller.py"
    # The call's caller says when it took the stream (a file), so that the signal is sent
    # while it reads: the server seeing the call is not enough, as under load the caller
    # may not have reached take() yet (CI once sent the signal before it did).
    script.write_text(
        "import threading\n"
        "from mcpsync import Client\n"
        "from mcpsync.engine.reading import ReadRole\n"
        "armed = threading.Event()\n"
        "real_take = ReadRole.take\n"
        "def take(role):\n"
        "    taken = real_take(role)\n"
        "    if taken and armed.is_set():\n"
        f"        open({str(reading)!r}, 'w').close()\n"
        "    return taken\n"
        "ReadRole.take = take\n"
        f"with Client.stdio({SERVER!r}) as c:\n"
        # Once idle, the reader thread leaves the stream to callers for 60 s, not 10 ms,
        # so that the call below finds it free even on a loaded machine.
        "    c._connection._role.grace = 60\n"
        "    c.call_tool('echo', {'text': 'warm'})\n"
        "    print('ready', c._connection._role.lent, flush=True)\n"
        "    armed.set()\n"
        "    try:\n"
        f"        c.call_tool('silent', {{'marker': {str(marker)!r}}}, timeout=60)\n"
        "    except KeyboardInterrupt:\n"
        "        armed.clear()\n"
        "        print('interrupted', c._connection._role.lent, flush=True)\n"
        "        print(c.call_tool('echo', {'text': 'whole'}).text, flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        ready, before = proc.stdout.readline().split()
        assert ready == "ready"
        # The call arrived, and its caller took the stream to read its answer.
        wait_until(lambda: marker.exists() and reading.exists(), timeout=WAIT,
                   message="the call never arrived, or its caller never read")
        proc.send_signal(signal.SIGINT)
        # ... and it was that caller who read (and was interrupted while reading).
        assert proc.stdout.readline().split() == ["interrupted", str(int(before) + 1)]
        assert proc.stdout.readline().strip() == "whole"
        assert proc.wait(WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_an_exception_between_reading_bytes_and_decoding_them_ends_the_stream(monkeypatch):
    """A KeyboardInterrupt (or a signal handler's exception) raised into a caller after it
    read bytes but before they were decoded loses them: the stream then refuses to go on,
    with a clear error, rather than decode the rest of a message from its middle."""
    read_fd, write_fd = os.pipe()
    with open(os.devnull, "wb") as sink:
        transport = StreamTransport(read_fd, sink)
        try:
            os.write(write_fd, b'{"jsonrpc": "2.0", "method": "a"}\n{"jsonrpc": "2.0", "met')
            decoder = transport._decoder

            class Interrupted:
                def feed(self, chunk: bytes) -> object:
                    monkeypatch.setattr(transport, "_decoder", decoder)
                    raise KeyboardInterrupt

            monkeypatch.setattr(transport, "_decoder", Interrupted())
            with pytest.raises(KeyboardInterrupt):
                transport.receive_within(WAIT)
            os.write(write_fd, b'hod": "b"}\n')
            with pytest.raises(ConnectionClosedError, match="interrupted part-way"):
                transport.receive_within(WAIT)
        finally:
            transport.close()
            os.close(read_fd)
            os.close(write_fd)


def test_receive_within_times_out_and_then_reads():
    read_fd, write_fd = os.pipe()
    with open(os.devnull, "wb") as sink:
        transport = StreamTransport(read_fd, sink)
        try:
            with pytest.raises(TimeoutError):
                transport.receive_within(0.01)
            os.write(write_fd, b'{"jsonrpc": "2.0", "method": "a"}\n')
            assert transport.receive_within(WAIT).method == "a"
            assert not transport.buffered
        finally:
            transport.close()
            os.close(read_fd)
            os.close(write_fd)


def test_ctrl_c_just_after_a_caller_took_the_stream_gives_it_back(monkeypatch):
    """A KeyboardInterrupt that lands after ``take()`` succeeded but before the read began
    (a signal handler runs between any two bytecodes) must not leave the stream held by
    nobody that reads: the stream used to stay "lent" for ever, and every later call
    waited out its timeout."""
    from mcpsync.engine.reading import ReadRole

    real_take = ReadRole.take
    armed = threading.Event()

    def take_then_interrupted(role: ReadRole) -> bool:
        taken = real_take(role)
        if taken and armed.is_set():
            armed.clear()
            raise KeyboardInterrupt
        return taken

    with Client.stdio(SERVER, timeout=WAIT) as client:
        client.call_tool("echo", {"text": "warm"})
        monkeypatch.setattr(ReadRole, "take", take_then_interrupted)
        armed.set()
        with pytest.raises(KeyboardInterrupt):
            while armed.is_set():  # until a call took the stream (the reader may hold it)
                client.call_tool("echo", {"text": "interrupted"})
        assert client.call_tool("echo", {"text": "whole"}, timeout=5).text == "whole"
