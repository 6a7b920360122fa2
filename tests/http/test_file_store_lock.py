"""FileSessionStore's lock is a wait on another process: one stopped while holding it
(SIGSTOP, a debugger, swapped out) held every other worker's saves for ever. The wait now
ends by the request's store budget (503 + Retry-After), or by LOCK_WAIT outside one."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from mcpsync.errors import StoreUnavailableError
from mcpsync.http import FileSessionStore, SessionRecord
from mcpsync.http import session_store as module
from tests.http.raw import LEGACY

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # hold the lock until the test closes our stdin
"""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A directory whose store lock another process holds until teardown."""
    directory = tmp_path / "sessions"
    directory.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory / ".lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield directory
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)


def test_a_save_outside_a_request_ends_by_lock_wait(held: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "LOCK_WAIT", 0.5)
    store = FileSessionStore(held)
    outcome: list[BaseException] = []

    def save() -> None:
        try:
            store.save(SessionRecord("s1", LEGACY))
        except BaseException as exc:
            outcome.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=save, name="test-save")
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "the save waited for the lock with no bound"
    assert time.monotonic() - started < 3
    assert len(outcome) == 1 and isinstance(outcome[0], StoreUnavailableError)
    assert "locked" in str(outcome[0])


def test_a_request_gets_503_within_its_store_budget(held: Path, serve) -> None:  # type: ignore[no-untyped-def]
    served = serve(session_store=FileSessionStore(held), store_budget=1.0)
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    started = time.monotonic()
    answer = requests.post(served.url, json=body, timeout=10, headers={
        "Accept": "application/json, text/event-stream"})
    assert time.monotonic() - started < 4
    assert answer.status_code == 503, answer.text
    assert answer.headers.get("Retry-After")
    assert answer.json()["error"]["code"] == -32603
