"""A program that prints something that is not JSON-RPC and exits (``echo hello``) is
reported as such: the ``ServerExitedError`` quotes what it wrote. The write of
``initialize`` to a child that already exited must not surface as "stream is closed" or
"I/O operation on closed file": which thread sees the end first is a race, so the test
runs the program several times."""

from __future__ import annotations

import shutil
import time

import pytest

from mcpsync import Client, ServerExitedError

ECHO = shutil.which("echo")
RUNS = 12


@pytest.mark.skipif(ECHO is None, reason="no echo program")
def test_a_program_that_prints_and_exits_is_quoted_every_time():
    assert ECHO is not None
    for _ in range(RUNS):
        started = time.monotonic()
        with pytest.raises(ServerExitedError) as caught:
            Client.stdio([ECHO, "hello"], timeout=10)
        error = caught.value
        assert error.stray_output == "hello", str(error)
        assert error.returncode == 0
        assert "it wrote on stdout (not JSON-RPC): 'hello'" in str(error)
        assert "closed" not in error.reason
        # Nobody waits on a reader that is itself waiting to write: no 2-second stall.
        assert time.monotonic() - started < 1.8


def test_a_server_that_ends_without_printing_has_no_stray_output(tmp_path):
    import sys

    with pytest.raises(ServerExitedError) as caught:
        Client.stdio([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=10)
    assert caught.value.stray_output is None
    assert caught.value.returncode == 3
    assert "not JSON-RPC" not in str(caught.value)
