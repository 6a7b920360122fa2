"""Serve a WSGI app on a real socket for tests: werkzeug's threaded server on 127.0.0.1,
an ephemeral port, its own named thread; ``stop()`` shuts it down and joins the thread
(bounded). Also: a port reserved for a server subprocess, a bounded wait until a port
accepts connections, and a server subprocess run for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

from tests.helpers import WAIT, slack, wait_until

STOP_TIMEOUT = slack(10.0)
ROOT = Path(__file__).resolve().parents[1]
_names = itertools.count()


def shut_down(httpd: socketserver.BaseServer, thread: threading.Thread,
              timeout: float = STOP_TIMEOUT) -> None:
    """Stop ``httpd.serve_forever`` (running on ``thread``) and join it, by one deadline.

    socketserver's own ``shutdown()`` waits for the loop with no bound, and a loop held in
    one request (a TLS handshake inside ``accept``, a one-thread server's handler) would
    hold a test's clean-up for good: clean-up runs after pytest-timeout's one alarm. So it
    is asked on a helper thread, and the loop's thread joined by the deadline."""
    asker = threading.Thread(target=httpd.shutdown, name=f"{thread.name}-shutdown",
                             daemon=True)
    asker.start()
    thread.join(timeout)
    asker.join(0.5)
    assert not thread.is_alive(), f"{thread.name}: the server loop did not stop"


class QuietHandler(WSGIRequestHandler):
    """werkzeug's request handler without the access log on stderr."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class RunningServer:
    """A WSGI ``app`` being served at ``base`` (``http://127.0.0.1:PORT``, or ``https`` with
    an ``ssl_context``). The one WSGI-on-a-thread server of the tests: use it (or the
    fixtures built on it) rather than another ``make_server`` + ``serve_forever`` thread.
    ``quiet=False`` keeps werkzeug's access log on stderr."""

    def __init__(self, app: Any, *, on_stop: Callable[[], None] | None = None,
                 ssl_context: Any = None, quiet: bool = True) -> None:
        self.app = app
        self._on_stop = on_stop
        self._httpd = make_server("127.0.0.1", 0, app, threaded=True,
                                  request_handler=QuietHandler if quiet else None,
                                  ssl_context=ssl_context)
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_port
        scheme = "http" if ssl_context is None else "https"
        self.base = f"{scheme}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=f"mcpsync-test-wsgi-{next(_names)}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        try:
            shut_down(self._httpd, self._thread)
        finally:  # the socket and the app are let go of even when the loop is stuck
            self._httpd.server_close()
            if self._on_stop is not None:
                self._on_stop()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Ports handed out by free_port, each held by a bound socket until its server listens.
_reserved: dict[int, socket.socket] = {}
_reserved_lock = threading.Lock()
_MAX_RESERVED = 64


def free_port() -> int:
    """A TCP port on 127.0.0.1 reserved for a server the caller is about to start.

    The old way (bind to port 0, close, hand the number on) raced: between the close and
    the server's bind, any process (a parallel test worker, an outgoing connection's
    ephemeral port) could take the port. Here the port stays bound, with SO_REUSEADDR and
    not listening, until the server listens on it (``wait_for_port`` then lets go of it):
    the kernel gives a bound port to no one else, while a server that also sets
    SO_REUSEADDR (gunicorn, nginx, redis-server, Python's socketserver) may still bind and
    listen there. A port nobody starts a server on is also one nothing answers on (a
    "closed port" for tests of refused connections). In-process servers need none of
    this: bind to port 0 and read the port back (``RunningServer``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    with _reserved_lock:
        _reserved[port] = sock
        while len(_reserved) > _MAX_RESERVED:  # bounded: the oldest is long in use by now
            _reserved.pop(next(iter(_reserved))).close()
    return port


def release_port(port: int) -> None:
    """Let go of ``free_port``'s hold on ``port`` (its server listens there now)."""
    with _reserved_lock:
        sock = _reserved.pop(port, None)
    if sock is not None:
        sock.close()


def wait_for_port(port: int, *, timeout: float = WAIT,
                  proc: subprocess.Popen[Any] | None = None) -> None:
    """Block until 127.0.0.1:``port`` accepts a connection; fail after ``timeout`` seconds or
    as soon as ``proc`` (the process that should listen) has exited."""
    last: list[OSError] = []

    def listening() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server process exited with {proc.returncode} before "
                               f"listening on port {port}")
        try:
            # The connect attempt itself is the bounded wait (refused fast, else times out).
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError as exc:
            last[:] = [exc]
            return False

    # Another process opens the port: nothing to wait on but the port itself.
    wait_until(listening, timeout=timeout, interval=0.05,
               message=lambda: f"nothing listened on 127.0.0.1:{port} ({last[0] if last else ''})")
    release_port(port)


@contextlib.contextmanager
def serving_process(argv: Sequence[str], port: int, *, cwd: str | os.PathLike[str] | None = None,
                    env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run a server subprocess (gunicorn, a web example) until it listens on ``port``;
    yield its base URL; stop it afterwards (SIGTERM, then kill, bounded) and fail the test
    if it printed a traceback. Its stderr goes to a file, not a pipe: a pipe nobody reads
    until the end fills (64 KiB) and blocks a chatty server mid-test."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
        proc = subprocess.Popen(list(argv), cwd=cwd,
                                env=dict(env) if env is not None else None,
                                stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            wait_for_port(port, proc=proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
        stderr.seek(0)
        err = stderr.read()
    assert "Traceback" not in err, err


@contextlib.contextmanager
def client_over(kind: str, server: Any, module: str | None, version: str,
                **options: Any) -> Iterator[Any]:
    """A ``Client`` of ``server`` over ``kind``: ``"memory"`` (in this process),
    ``"stdio"`` (``python -m module`` as a real subprocess, from the repository root) or
    ``"http"`` (``server.wsgi_app()`` on a real socket), speaking ``version``; ``options``
    go to the ``Client``. The one way the tests that run the same checks on every
    transport connect (``module=None``: a server with no module of its own, memory and
    HTTP only)."""
    from mcpsync import Client

    options.setdefault("timeout", 30)
    if kind == "memory":
        with Client.memory(server, protocol_version=version, **options) as client:
            yield client
    elif kind == "stdio":
        assert module is not None, "over stdio the server runs as python -m MODULE"
        command = [sys.executable, "-m", module]
        with Client.stdio(command, cwd=ROOT, protocol_version=version, **options) as client:
            yield client
    else:
        app = server.wsgi_app(path="/mcp")
        with (RunningServer(app, on_stop=app.close) as running,
              Client.http(running.base + "/mcp", protocol_version=version,
                          **options) as client):
            yield client


@contextlib.contextmanager
def running_devserver(app: Any, **options: Any) -> Iterator[Any]:
    """``mcpsync``'s dev server (``DevServer("127.0.0.1", 0, app, **options)``) serving on
    a named thread for the block; shut down and joined (bounded) after it."""
    from mcpsync.http.devserver.server import DevServer

    httpd = DevServer("127.0.0.1", 0, app, **options)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"test-devserver-{next(_names)}", daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        try:
            shut_down(httpd, thread)
        finally:
            httpd.server_close()
            httpd.join_connections(STOP_TIMEOUT)


def gunicorn_argv(app: str, port: int, *, workers: int = 2, threads: int | None = 8,
                  options: Sequence[str] = ()) -> list[str]:
    """The command line of gunicorn serving ``app`` ("module:attribute") on
    127.0.0.1:``port``: ``workers`` processes of ``threads`` threads each (the gthread
    worker), or gunicorn's sync worker with ``threads=None``; a 5 s graceful timeout; then
    ``options``. The one way the tests start gunicorn."""
    argv = [sys.executable, "-m", "gunicorn", "--workers", str(workers),
            "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "5"]
    if threads is not None:
        argv += ["--worker-class", "gthread", "--threads", str(threads)]
    return [*argv, *options, app]


def with_root_on_path(env: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``env`` (default ``os.environ``) plus ``extra``, with the repository first on
    ``PYTHONPATH`` (so a server subprocess imports ``tests.`` and this checkout's code)."""
    merged = dict(os.environ if env is None else env)
    merged.update(extra)
    merged["PYTHONPATH"] = str(ROOT) + os.pathsep + merged.get("PYTHONPATH", "")
    return merged


@contextlib.contextmanager
def running_gunicorn(app: str, *, env: Mapping[str, str] | None = None, workers: int = 2,
                     threads: int | None = 8, options: Sequence[str] = ()) -> Iterator[str]:
    """gunicorn serving ``app`` (see ``gunicorn_argv``) from the repository root, on a
    port of its own, for the block; yields its base URL. Stopped by ``serving_process``
    (SIGTERM, then kill, bounded); a traceback on its stderr fails the test."""
    port = free_port()
    argv = gunicorn_argv(app, port, workers=workers, threads=threads, options=options)
    with serving_process(argv, port, cwd=ROOT, env=with_root_on_path(env)) as base:
        yield base
