"""Real Celery workers for the tests: ``celery worker`` subprocesses on the run's
``redis-server`` (broker and task store), started per test and stopped by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import LONG_WAIT, require_module

require_module("celery")

ROOT = Path(__file__).resolve().parents[2]
READY_WAIT = LONG_WAIT


class Worker:
    """One ``celery worker`` process; ``ready`` once it consumes, ``log`` what it printed."""

    def __init__(self, env: dict[str, str], name: str, pool: str, concurrency: int) -> None:
        argv = [sys.executable, "-m", "celery", "-A", "tests.on_celery.app:celery_app",
                "worker", "--pool", pool, "--concurrency", str(concurrency), "--loglevel",
                "INFO", "--hostname", f"{name}@%h", "--without-gossip", "--without-mingle",
                "--without-heartbeat"]
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.log: list[str] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, name=f"celery-{name}-log",
                                        daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line)
            if " ready." in line:
                self.ready.set()
        self.ready.set()  # exited: whoever waits looks at returncode

    def wait_ready(self) -> None:
        assert self.ready.wait(READY_WAIT), "".join(self.log)
        assert self.proc.poll() is None, "the worker exited:\n" + "".join(self.log)

    def stop(self) -> None:
        """Stop the worker and its pool processes at the end of a test: SIGQUIT, Celery's
        cold shutdown (a SIGTERM's warm shutdown waits for the pool and took ~2.4 s of
        every test; nothing of a finished test is left to wait for: its keys are its own)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGQUIT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(20)
        self._reader.join(20)


@pytest.fixture
def deployment_env(redis_url: str, redis_prefix: str) -> dict[str, str]:
    return dict(os.environ, MCPSYNC_TEST_REDIS=redis_url, MCPSYNC_TEST_PREFIX=redis_prefix,
                PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture
def workers(deployment_env: dict[str, str]) -> Iterator[object]:
    """``workers(name, pool="prefork", concurrency=2)`` starts a ready Celery worker."""
    started: list[Worker] = []

    def start(name: str = "w1", *, pool: str = "prefork", concurrency: int = 2) -> Worker:
        worker = Worker(deployment_env, name, pool, concurrency)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        with contextlib.suppress(Exception):
            worker.stop()
