"""Serve a WSGI app on a real socket for tests: werkzeug's threaded server on 127.0.0.1,
an ephemeral port, its own named thread; ``stop()`` shuts it down and joins the thread
(bounded). Also: a free port, a bounded wait until a port accepts connections, and a
server subprocess run for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

from tests.helpers import wait_until

STOP_TIMEOUT = 10.0
ROOT = Path(__file__).resolve().parents[1]
_names = itertools.count()


class QuietHandler(WSGIRequestHandler):
    """werkzeug's request handler without the access log on stderr."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class RunningServer:
    """A WSGI ``app`` being served at ``base`` (``http://127.0.0.1:PORT``)."""

    def __init__(self, app: Any, *, on_stop: Callable[[], None] | None = None) -> None:
        self.app = app
        self._on_stop = on_stop
        self._httpd = make_server("127.0.0.1", 0, app, threaded=True,
                                  request_handler=QuietHandler)
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_port
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=f"mcpsync-test-wsgi-{next(_names)}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._thread.join(STOP_TIMEOUT)
        self._httpd.server_close()
        if self._on_stop is not None:
            self._on_stop()
        assert not self._thread.is_alive(), "the test HTTP server did not stop"

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, *, timeout: float = 30.0,
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


@contextlib.contextmanager
def serving_process(argv: Sequence[str], port: int, *, cwd: str | os.PathLike[str] | None = None,
                    env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run a server subprocess (gunicorn, a web example) until it listens on ``port``;
    yield its base URL; stop it afterwards (SIGTERM, then kill, bounded) and fail the test
    if it printed a traceback."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env) if env is not None else None,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=15)
    assert "Traceback" not in err, err


@contextlib.contextmanager
def client_over(kind: str, server: Any, module: str, version: str,
                **options: Any) -> Iterator[Any]:
    """A ``Client`` of ``server`` over ``kind``: ``"memory"`` (in this process),
    ``"stdio"`` (``python -m module`` as a real subprocess, from the repository root) or
    ``"http"`` (``server.wsgi_app()`` on a real socket), speaking ``version``. The one way
    the tests that run the same checks on every transport connect."""
    from mcpsync import Client

    options.setdefault("timeout", 30)
    if kind == "memory":
        with Client.memory(server, protocol_version=version, **options) as client:
            yield client
    elif kind == "stdio":
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
        httpd.shutdown()
        httpd.server_close()
        httpd.join_connections(STOP_TIMEOUT)
        thread.join(STOP_TIMEOUT)
        assert not thread.is_alive(), "the dev server did not stop"
