"""A Client dropped without ``close()`` (a notebook cell run again, a forgotten ``with``):
garbage collection closes it, a stdio server process exits, and a ``ResourceWarning``
says so."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import warnings
import weakref
from pathlib import Path

import pytest

from mcpsync import Client
from tests.helpers import WAIT, wait_until
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"


def collect(ref: weakref.ref[Client]) -> None:
    """Collect until the client is gone: a connection thread may hold it for a moment (while
    it hands a notification over), and then one ``gc.collect()`` is not enough."""
    def collected() -> bool:
        gc.collect()
        return ref() is None

    wait_until(collected, timeout=WAIT, message="the dropped client was never collected")


def _gone(pid: int) -> bool:
    """Whether ``pid`` was reaped (by the transport: it is our child)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_dropped_stdio_client_ends_its_server_and_warns(version):
    client = Client.stdio([sys.executable, str(FIXTURE)], env={"PYTHONPATH": str(ROOT)},
                          protocol_version=version, timeout=WAIT, on_log=lambda m: None)
    assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    pid = client._connection.transport.process.pid  # type: ignore[attr-defined]
    assert not _gone(pid)
    ref = weakref.ref(client)
    with pytest.warns(ResourceWarning, match="not closed"):
        del client
        collect(ref)
    wait_until(lambda: _gone(pid), timeout=WAIT, message=f"server process {pid} still runs")


def test_running_the_same_cell_twice_leaves_one_server():
    pids = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        for _ in range(3):  # `client = Client.stdio(...)` run three times
            client = Client.stdio([sys.executable, str(FIXTURE)],
                                  env={"PYTHONPATH": str(ROOT)}, timeout=WAIT)
            pids.append(client._connection.transport.process.pid)  # type: ignore[attr-defined]
            gc.collect()
        wait_until(lambda: gc.collect() is not None and all(_gone(pid) for pid in pids[:-1]),
                   timeout=WAIT, message="an earlier server process still runs")
        assert not _gone(pids[-1])
        client.close()
    assert _gone(pids[-1])


def test_a_closed_client_does_not_warn_when_collected():
    client = Client.memory(fixture_server)
    client.close()
    ref = weakref.ref(client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del client
        collect(ref)


def test_a_dropped_memory_client_ends_its_server_session():
    before = {t.name for t in threading.enumerate()}
    client = Client.memory(fixture_server, protocol_version="2025-11-25")
    client.ping()
    ref = weakref.ref(client)
    with pytest.warns(ResourceWarning):
        del client
        collect(ref)

    def left() -> set[str]:
        return {t.name for t in threading.enumerate()} - before

    wait_until(lambda: not left(), timeout=WAIT, message=lambda: f"threads left: {left()}")


def test_a_dropped_http_client_ends_its_threads():
    app = fixture_server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        client = Client.http(running.base + "/mcp", timeout=WAIT)
        client.call_tool("add", {"a": 1, "b": 2})
        name = client._connection.name

        def left() -> list[str]:
            return [t.name for t in threading.enumerate() if t.name.startswith(name)]

        assert left()
        ref = weakref.ref(client)
        with pytest.warns(ResourceWarning, match="HTTP to http://127.0.0.1"):
            del client
            collect(ref)
        wait_until(lambda: not left(), timeout=WAIT, message=lambda: f"threads left: {left()}")


DEAF = ROOT / "tests" / "stdio" / "deaf_server.py"


def test_collecting_a_dropped_client_does_not_wait_for_its_server_to_exit():
    """The garbage collector runs a finalizer on whichever thread allocates: the main thread
    of a notebook or CLI. Waiting there for a stdio server to exit stalled it at a random
    allocation (up to 15 s) and swallowed a Ctrl-C pressed meanwhile ("Exception ignored
    in: <finalize object>"). The server here needs SIGTERM (it does not read its stdin
    any more), 2 s after stdin closed: collecting must return while it still runs."""
    with open(os.devnull, "w") as sink:
        client = Client.stdio([sys.executable, str(DEAF)], stderr=sink, timeout=WAIT)
    process = client._connection.transport.process  # type: ignore[attr-defined]
    ref = weakref.ref(client)
    with pytest.warns(ResourceWarning, match="not closed"):
        del client
        collect(ref)
        assert process.poll() is None, "the collecting thread waited for the server to exit"
    wait_until(lambda: process.poll() is not None, timeout=WAIT,
               message=f"server process {process.pid} still runs")


def _ended(pid: int) -> bool:
    """Whether ``pid`` no longer runs: gone, or a zombie nobody has reaped yet (the child
    of a process that exited, waiting for init)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
@pytest.mark.parametrize("drop", ["alive at exit", "collected just before exit"])
def test_a_script_that_exits_without_close_leaves_no_server_running(drop):
    """Either way the interpreter's exit waits for the server to be ended: the finalizer
    joins at exit, and a closer started earlier is a thread the interpreter waits for."""
    script = "\n".join([
        "import gc, sys, os",
        "from mcpsync import Client",
        f"client = Client.stdio([sys.executable, {str(DEAF)!r}], stderr=open(os.devnull, 'w'))",
        "print(client._connection.transport.process.pid, flush=True)",
        *(["del client", "gc.collect()"] if drop != "alive at exit" else []),
    ])

    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True,
                          text=True, timeout=WAIT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[0])
    assert _ended(pid), f"server process {pid} outlived the script"
