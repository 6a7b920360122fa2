"""A server subprocess for the framework tests, its stderr kept in a file.

``tests.serving.serving_process`` pipes the server's stderr and reads it at the end; a
development server logs a line per request there, and a thousand requests fill the pipe,
after which the server blocks on its next log line. Here stderr goes to a file, read at
the end (a traceback in it fails the test, as there)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence

from tests.serving import wait_for_port


@contextlib.contextmanager
def server_process(argv: Sequence[str], port: int, *, cwd: str | os.PathLike[str],
                   env: Mapping[str, str]) -> Iterator[str]:
    """Run the server until it listens on ``port``; its base URL; stopped afterwards
    (SIGTERM, then kill, bounded)."""
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env),
                                stdout=subprocess.DEVNULL, stderr=log, text=True)
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
        log.seek(0)
        err = log.read()
    assert "Traceback" not in err, err
