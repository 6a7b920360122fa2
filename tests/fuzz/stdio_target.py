"""A real ``run_stdio`` server subprocess fed raw fuzz frames, one per line.

One process per era and test module (spawning per example would be too slow), restarted
when an example killed it — that example has already failed by then. After every case a
probe (``ping`` in the handshake era, a ``tools/call`` of ``echo`` in 2026-07-28) must be
answered; everything the server wrote meanwhile is checked (``checks.py``), and so is its
stderr: a logged traceback fails the case too.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from .checks import GRACE, ROOT, WAIT, answer_problems, answered_keys, must_answer, opens_listen
from .strategies import HANDSHAKE, MODERN, Case, envelope

SERVER = ROOT / "tests" / "fuzz" / "fuzz_server.py"


def probe(era: str, request_id: str) -> dict[str, Any]:
    """A request the server must answer whatever came before it."""
    if era == MODERN:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "alive"}, "_meta": envelope()}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def end_listens(era: str, request_id: str) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "end_listens", "arguments": {}}
    if era == MODERN:
        params["_meta"] = envelope()
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class StdioTarget:
    """The fuzz server over stdio, speaking ``era`` (initialized first in the handshake
    era, with the revision that has batches)."""

    def __init__(self, era: str) -> None:
        self.era = era
        self._ids = itertools.count()
        self._start()

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._stderr_lock = threading.Lock()
        threading.Thread(target=self._read, args=(self.proc, self.lines),
                         name="fuzz-stdio-out", daemon=True).start()
        threading.Thread(target=self._read_err, args=(self.proc,),
                         name="fuzz-stdio-err", daemon=True).start()
        if self.era == HANDSHAKE:
            self._write(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                    "params": {"protocolVersion": HANDSHAKE,
                                               "capabilities": {},
                                               "clientInfo": {"name": "fuzz",
                                                              "version": "0"}}}).encode())
            line = self.lines.get(timeout=WAIT)
            assert line is not None and b'"result"' in line, line
            self._write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    @staticmethod
    def _read(proc: subprocess.Popen[bytes], lines: queue.Queue[bytes | None]) -> None:
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, b""):
            lines.put(line)
        lines.put(None)

    def _read_err(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for line in iter(proc.stderr.readline, b""):
            with self._stderr_lock:
                self._stderr.append(line)

    def _take_stderr(self) -> str:
        with self._stderr_lock:
            text = b"".join(self._stderr).decode("utf-8", "replace")
            self._stderr.clear()
        return text

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def ensure_alive(self) -> None:
        """Restart a server that an earlier example killed (that example failed already)."""
        if self.proc.poll() is not None:
            self.close()
            self._start()

    def run(self, case: Case) -> None:
        """Send ``case``, then a probe; fail (AssertionError) on anything wrong."""
        self.ensure_alive()
        self._take_stderr()
        seen: list[dict[str, Any]] = []
        problems: list[str] = []
        try:
            for frame in case.frames:
                self._write(frame.data)
            tail = [f"probe-{next(self._ids)}"]
            if opens_listen(case):
                tail.insert(0, f"end-{next(self._ids)}")
                self._write(json.dumps(end_listens(self.era, tail[0])).encode())
            self._write(json.dumps(probe(self.era, tail[-1])).encode())
        except (BrokenPipeError, OSError) as exc:
            raise AssertionError(f"the server stopped reading ({exc}); exit code "
                                 f"{self.proc.poll()}; stderr:\n{self._take_stderr()[-3000:]}"
                                 ) from None
        wanted = set(must_answer(case, batches=False)) | {("str", t) for t in tail}
        deadline = time.monotonic() + WAIT
        while not wanted <= answered_keys(seen):
            if ("str", tail[-1]) in answered_keys(seen):
                # The probe is answered: what is still missing gets a grace period only.
                deadline = min(deadline, time.monotonic() + GRACE)
            remaining = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                missing = wanted - answered_keys(seen)
                raise AssertionError(
                    f"no answer in time to ids {sorted(map(repr, missing))}; answers "
                    f"seen: {seen!r:.1500}; problems: {problems}; stderr:\n"
                    f"{self._take_stderr()[-3000:]}") from None
            if line is None:
                self.proc.wait(WAIT)
                raise AssertionError(f"the server exited ({self.proc.returncode}); answers "
                                     f"seen: {seen!r:.1500}; stderr:\n"
                                     f"{self._take_stderr()[-3000:]}")
            messages, found = answer_problems(line.rstrip(b"\n"))
            seen.extend(messages)
            problems.extend(found)
        stderr = self._take_stderr()
        if "Traceback" in stderr:
            problems.append(f"the server logged a traceback:\n{stderr[-3000:]}")
        assert not problems, "\n".join(problems)

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(WAIT)
