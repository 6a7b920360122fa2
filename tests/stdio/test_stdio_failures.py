"""A stdio server that fails says how: the command, the exit status or signal, and the last
lines of its stderr, in the exception (``ServerExitedError``) and not just "closed".

Every server here is a real child process: small scripts written for the test, or
``raw_server.py`` (a stdio server without mcpsync that misbehaves on request).
"""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from mcpsync import Client, ConnectionClosedError, ServerExitedError
from mcpsync.transports.subprocess import STDERR_TAIL_BYTES, STDERR_TAIL_LINES
from tests.helpers import WAIT

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "stdio" / "raw_server.py"
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"
ENV = {"PYTHONPATH": str(ROOT)}


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_import_error_at_start_names_the_command_the_status_and_the_traceback(tmp_path):
    broken = script(tmp_path, "broken.py", """\
        import sys
        print("starting up", file=sys.stderr)
        import mcpsync_no_such_module_for_the_test
    """)
    command = [sys.executable, str(broken)]
    with pytest.raises(ServerExitedError) as info:
        Client.stdio(command, timeout=WAIT)
    exc = info.value
    assert isinstance(exc, ConnectionClosedError)  # still what callers catch today
    assert exc.returncode == 1
    assert exc.command == command
    assert "ModuleNotFoundError" in exc.stderr_tail
    assert "mcpsync_no_such_module_for_the_test" in exc.stderr_tail
    assert "starting up" in exc.stderr_tail
    message = str(exc)
    assert "exited with status 1" in message
    assert "initialize" in message
    assert str(broken) in message
    assert "ModuleNotFoundError: No module named 'mcpsync_no_such_module_for_the_test'" in message


def test_syntax_error_at_start(tmp_path):
    broken = script(tmp_path, "syntax.py", "def broken(:\n    pass\n")
    with pytest.raises(ServerExitedError) as info:
        Client.stdio([sys.executable, str(broken)], timeout=WAIT)
    assert info.value.returncode == 1
    assert "SyntaxError" in str(info.value)


def test_killed_by_a_signal_during_initialize():
    with pytest.raises(ServerExitedError) as info:
        Client.stdio([sys.executable, str(RAW), "--kill-on-initialize"], timeout=WAIT)
    exc = info.value
    assert exc.returncode == -signal.SIGKILL
    assert "killed by signal 9 (SIGKILL)" in str(exc)
    assert "raw_server: about to be killed" in exc.stderr_tail


def test_exit_without_stderr_says_so(tmp_path):
    quiet = script(tmp_path, "quiet.py", "import sys\nsys.exit(3)\n")
    with pytest.raises(ServerExitedError) as info:
        Client.stdio([sys.executable, str(quiet)], timeout=WAIT)
    assert info.value.returncode == 3
    assert info.value.stderr_tail == ""
    assert "exited with status 3" in str(info.value)
    assert "nothing on its stderr" in str(info.value)


def test_the_stderr_tail_is_bounded_in_lines_and_bytes(tmp_path):
    noisy = script(tmp_path, "noisy.py", """\
        import sys
        for i in range(5000):
            print(f"line {i} " + "y" * 200, file=sys.stderr)
        print("the last words, without a newline", end="", file=sys.stderr)
        sys.exit(4)
    """)
    with pytest.raises(ServerExitedError) as info:
        Client.stdio([sys.executable, str(noisy)], timeout=WAIT)
    tail = info.value.stderr_tail
    assert len(tail.encode()) <= STDERR_TAIL_BYTES
    assert len(tail.splitlines()) <= STDERR_TAIL_LINES
    assert tail.endswith("the last words, without a newline")
    assert "line 4999 " in tail
    assert "line 0 " not in tail
    assert len(str(info.value)) < STDERR_TAIL_BYTES + 1024


def test_a_very_long_stderr_line_is_cut_in_the_tail(tmp_path):
    noisy = script(tmp_path, "long.py", """\
        import sys
        sys.stderr.write("z" * 1_000_000 + "\\n")
        sys.exit(5)
    """)
    with pytest.raises(ServerExitedError) as info:
        Client.stdio([sys.executable, str(noisy)], timeout=WAIT)
    assert 0 < len(info.value.stderr_tail.encode()) <= STDERR_TAIL_BYTES


@pytest.mark.parametrize("command", [
    ["mcpsync-no-such-program-for-the-test", "serve"],
    ["./no/such/dir/server"],
])
def test_a_missing_executable_is_reported_before_spawning(command):
    with pytest.raises(FileNotFoundError) as info:
        Client.stdio(command, timeout=WAIT)
    message = str(info.value)
    assert "stdio server command not found" in message
    assert repr(command[0]) in message


def test_a_file_that_is_not_executable_is_reported_before_spawning(tmp_path):
    server = script(tmp_path, "server.py", "print('hi')\n")
    server.chmod(stat.S_IRUSR | stat.S_IWUSR)
    if os.access(server, os.X_OK):  # root may execute anything with an x bit; not here
        pytest.skip("this user can execute a file without execute permission")
    with pytest.raises(PermissionError) as info:
        Client.stdio([str(server)], timeout=WAIT)
    assert "not executable" in str(info.value)
    assert sys.executable in str(info.value)  # the hint: run it with an interpreter


def test_death_mid_session_carries_the_status_and_the_tail():
    command = [sys.executable, str(RAW), "--die-on-call", "7"]
    with Client.stdio(command, timeout=WAIT) as client:
        assert [tool.name for tool in client.list_tools()] == ["ping_tool"]
        with pytest.raises(ServerExitedError) as info:
            client.call_tool("ping_tool")
        exc = info.value
        assert exc.returncode == 7
        assert "raw_server: fatal: the tool crashed" in exc.stderr_tail
        assert "exited with status 7 while waiting for tools/call" in str(exc)
        # Later calls fail the same way, with the same details.
        with pytest.raises(ServerExitedError) as later:
            client.ping()
        assert later.value.returncode == 7
        assert "raw_server: fatal: the tool crashed" in str(later.value)


def test_killed_mid_session_fails_the_pending_call_with_the_signal():
    with Client.stdio([sys.executable, str(FIXTURE)], env=ENV, timeout=WAIT) as client:
        errors: list[BaseException] = []
        started = threading.Event()

        def call() -> None:
            started.set()
            try:
                client.call_tool("block", {"seconds": 30})
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=call)
        t.start()
        assert started.wait(WAIT)
        client.ping()  # the call above has been sent by now (same write order)
        client._connection.transport.process.kill()
        t.join(WAIT)
        assert len(errors) == 1 and isinstance(errors[0], ServerExitedError)
        assert errors[0].returncode == -signal.SIGKILL
        assert "while waiting for tools/call" in str(errors[0])
        with pytest.raises(ServerExitedError):
            client.ping()


def test_closing_the_client_normally_raises_nothing_about_the_exit():
    client = Client.stdio([sys.executable, str(RAW)], timeout=WAIT)
    assert client.call_tool("ping_tool").text == "pong"
    client.close()
    with pytest.raises(ConnectionClosedError) as info:
        client.ping()
    assert not isinstance(info.value, ServerExitedError)  # we closed it; it did not crash


def test_ten_mib_of_stderr_before_the_answer_does_not_stall_the_call():
    """docs/client.md promises that a chatty server never blocks. Reading stderr one byte
    per system call managed about 1 MiB/s: this call took ~10 s and a core."""
    command = [sys.executable, str(RAW), "--stderr-bytes", str(10 * 1024 * 1024)]
    started = time.monotonic()
    cpu = time.process_time()
    with Client.stdio(command, timeout=WAIT) as client:
        assert client.call_tool("ping_tool").text == "pong"
        elapsed = time.monotonic() - started
        cpu_used = time.process_time() - cpu
    # Generous for a loaded machine; the old drain needed well over this in CPU alone.
    assert cpu_used < 3.0, f"draining 10 MiB of stderr took {cpu_used:.1f} s of CPU"
    assert elapsed < WAIT


def documented_stderr_recipe() -> str:
    """The first Python block of docs/client.md's "The server's stderr" section."""
    text = (ROOT / "docs" / "client.md").read_text(encoding="utf-8")
    section = text[text.index("## The server's stderr"):]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_documented_stderr_logging_shows_the_lines(tmp_path):
    """The recipe in docs/client.md prints the server's stderr. (The old advice, a bare
    ``setLevel(logging.INFO)``, printed nothing: the logger had no handler.)"""
    recipe = documented_stderr_recipe()
    assert "mcpsync.server_stderr" in recipe
    caller = tmp_path / "caller.py"
    caller.write_text(recipe + textwrap.dedent(f"""
        import sys
        from mcpsync import Client

        with Client.stdio([sys.executable, {str(FIXTURE)!r}], env={ENV!r}) as c:
            c.call_tool("chatty")
    """))
    done = subprocess.run([sys.executable, str(caller)], capture_output=True, text=True,
                          env=dict(os.environ, **ENV), timeout=WAIT)
    assert done.returncode == 0, done.stderr
    assert "explicit stderr" in done.stderr


def test_lines_go_whole_to_a_stderr_file_and_the_tail_is_kept_too(tmp_path):
    """With ``stderr=`` every line reaches the file, split at newlines only (chunked reads
    must not cut lines), and the error still carries the tail."""
    noisy = script(tmp_path, "lines.py", """\
        import os, sys
        os.write(2, b"".join(b"line %d\\n" % i for i in range(3000)) + b"partial")
        sys.exit(6)
    """)
    sink = io.StringIO()
    with pytest.raises(ServerExitedError) as info:
        Client.stdio([sys.executable, str(noisy)], stderr=sink, timeout=WAIT)
    assert sink.getvalue().splitlines() == [f"line {i}" for i in range(3000)] + ["partial"]
    assert info.value.stderr_tail.splitlines()[-2:] == ["line 2999", "partial"]
    assert info.value.returncode == 6
