"""Real infrastructure for the scale-out tests: a ``redis-server`` started on a free loopback
port in a temp dir and stopped by its PID. The Debian package provides the binary;
``scripts/install-peers`` installs it (as root, with ``apt-get``) when it is missing.

A missing binary skips the test that needs it, or fails it when
``MCPSYNC_REQUIRE_PEERS=1`` (CI, where a silent skip would hide a broken install).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from typing import Any

from tests.helpers import REQUIRE_ENV, missing, require_module, slack
from tests.serving import free_port, wait_for_port

STOP_TIMEOUT = slack(10.0)


def require_binary(name: str, *, also: tuple[str, ...] = ()) -> str:
    """The absolute path of the executable ``name`` (looked up on PATH, then in ``also``);
    skip the test when it is missing, or fail it in CI."""
    found = shutil.which(name)
    if found is None:
        found = next((p for p in also if os.access(p, os.X_OK)), None)
    if found is None:
        missing(f"{name!r} is not installed (run scripts/install-peers as root)")
    return found


def require_redis_library() -> None:
    """Skip (fail in CI) when the ``redis`` client library is missing (the ``redis`` extra)."""
    require_module("redis")


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1, no persistence, in its own temp dir.

    ``url`` is stable across :meth:`restart` (same port), so a test can take Redis away and
    give it back under a running app. Not thread-safe: the test drives it."""

    def __init__(self) -> None:
        self.binary = require_binary("redis-server", also=("/usr/bin/redis-server",))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.mkdtemp(prefix="mcpsync-redis-")
        self._proc: subprocess.Popen[Any] | None = None

    def start(self) -> RedisServer:
        assert self._proc is None, "already running"
        self._proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self._dir,
             "--protected-mode", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, proc=self._proc)
        return self

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def stop(self) -> None:
        """Stop the process by its PID: SIGTERM, then SIGKILL (bounded)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(STOP_TIMEOUT)
        if proc.stderr is not None:
            proc.stderr.close()

    def kill(self) -> None:
        """Take Redis away at once (SIGKILL), as a crash would."""
        if self._proc is not None and self._proc.poll() is None:
            os.kill(self._proc.pid, signal.SIGKILL)
            self._proc.wait(STOP_TIMEOUT)
        self.stop()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def unique_prefix(name: str) -> str:
    """A key prefix no other test uses (tests share one Redis; nothing is flushed)."""
    return f"mcpsync-test:{name}:{os.urandom(6).hex()}"


__all__ = ["REQUIRE_ENV", "RedisServer", "require_binary", "require_redis_library", "unique_prefix"]
