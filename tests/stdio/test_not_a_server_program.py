"""A program that prints something that is not JSON-RPC and exits (``echo hello``) is
reported as such: the ``ServerExitedError`` quotes what it wrote. The write of
``initialize`` to a child that already exited must not surface as "stream is closed" or
"I/O operation on closed file": which thread sees the end first is a race, so the test
runs the program several times.

The stall the timing assertion catches is the transport's own bound on waiting for an
exited child (``_EXIT_WAIT``, 2 s). Against 2 s, a pass on a loaded machine and the bug
were under a second apart; the test raises the bound to twice ``WAIT``, so the bug would
cost a minute a run while a pass takes milliseconds, and asserts under half of ``WAIT``."""

from __future__ import annotations

import shutil
import time

import pytest

from mcpsync import Client, ServerExitedError
from mcpsync.transports import subprocess as subprocess_transport
from tests.helpers import WAIT

ECHO = shutil.which("echo")
RUNS = 12


@pytest.mark.skipif(ECHO is None, reason="no echo program")
def test_a_program_that_prints_and_exits_is_quoted_every_time(monkeypatch):
    assert ECHO is not None
    monkeypatch.setattr(subprocess_transport, "_EXIT_WAIT", 2 * WAIT)
    for _ in range(RUNS):
        started = time.monotonic()
        with pytest.raises(ServerExitedError) as caught:
            Client.stdio([ECHO, "hello"], timeout=10)
        error = caught.value
        assert error.stray_output == "hello", str(error)
        assert error.returncode == 0
        assert "it wrote on stdout (not JSON-RPC): 'hello'" in str(error)
        assert "closed" not in error.reason
        # Nobody waits on a reader that is itself waiting to write: no stall of _EXIT_WAIT.
        assert time.monotonic() - started < WAIT / 2


def test_a_server_that_ends_without_printing_has_no_stray_output(tmp_path):
    import sys

    with pytest.raises(ServerExitedError) as caught:
        Client.stdio([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=10)
    assert caught.value.stray_output is None
    assert caught.value.returncode == 3
    assert "not JSON-RPC" not in str(caught.value)
