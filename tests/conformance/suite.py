"""Run the official MCP conformance suite against mcpsync (server and client legs).

Used by ``tests/conformance/test_official_suite.py`` (each leg is a test) and by
``scripts/conformance-report`` (which regenerates ``docs/conformance.md``). The suite is
``@modelcontextprotocol/conformance`` from ``scripts/install-peers``, run with Node 22.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests.interop import peers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXPECTED_FAILURES = HERE / "expected-failures.yml"
REVISIONS = ("2025-11-25", "2026-07-28")
_SINGLE = re.compile(r"Passed: (\d+)/\d+, (\d+) failed(?:, (\d+) warnings)?")
_LINE = re.compile(r"^\s*([✓✗])\s+(\S+):\s+(\d+) passed,\s+(\d+) failed"
                   r"(?:,\s+(\d+) warnings)?")


@dataclass
class Scenario:
    name: str
    passed: int
    failed: int
    warnings: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0

    @property
    def clean(self) -> bool:
        """No failure and no warning: the client leg's baseline check (with an
        expected-failures file) counts a warning as a failure."""
        return self.failed == 0 and self.warnings == 0


@dataclass
class Leg:
    side: str          # "server" or "client"
    revision: str
    exit_code: int
    output: str
    scenarios: list[Scenario] = field(default_factory=list)

    @property
    def failing(self) -> list[str]:
        return [s.name for s in self.scenarios if not s.ok]


def _parse(output: str) -> list[Scenario]:
    seen: dict[str, Scenario] = {}
    summary = output.split("SUMMARY", 1)[-1]
    for line in summary.splitlines():
        match = _LINE.match(line)
        if match:
            name = match.group(2)
            seen[name] = Scenario(name, int(match.group(3)), int(match.group(4)),
                                  int(match.group(5) or 0))
    return list(seen.values())


def _expected_failures() -> set[str]:
    """The client scenarios ``expected-failures.yml`` lists (its ``- name`` lines)."""
    return {line.strip()[2:].strip() for line in EXPECTED_FAILURES.read_text().splitlines()
            if line.strip().startswith("- ")}


def _suite(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    cmd = [peers.require(peers.node22), peers.require(peers.conformance_js), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=peers.node_env(), cwd=str(ROOT), check=False)


class FixtureServer:
    """``python -m mcpsync serve tests/conformance/everything.py:server`` on a free port."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpsync", "serve", "tests/conformance/everything.py:server",
             "--port", "0"],
            cwd=str(ROOT), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
            env={**os.environ, "MCPSYNC_REQUEST_STATE_KEY": "conformance-key"})
        self.url: str | None = None
        ready = threading.Event()

        def watch() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                if self.url is None and " at http://" in line:
                    self.url = line.rsplit(" at ", 1)[1].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=watch, name="conformance-server-stderr", daemon=True).start()
        if not ready.wait(30.0) or self.url is None:
            self.close()
            raise RuntimeError("the conformance fixture server did not start")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10.0)


def run_server_leg(revision: str, outdir: Path, timeout: float = 600.0) -> Leg:
    server = FixtureServer()
    try:
        assert server.url is not None
        proc = _suite(["server", "--url", server.url, "--requirements", revision,
                       "-o", str(outdir)], timeout)
    finally:
        server.close()
    output = proc.stdout + proc.stderr
    return Leg("server", revision, proc.returncode, output, _parse(output))


def run_client_leg(revision: str, outdir: Path, timeout: float = 600.0) -> Leg:
    # The suite splits --command on single spaces: no spaces in these paths.
    command = f"{sys.executable} {HERE / 'client.py'}"
    proc = _suite(["client", "--command", command, "--requirements", revision,
                   "--timeout", "60000", "--expected-failures", str(EXPECTED_FAILURES),
                   "-o", str(outdir)], timeout)
    output = proc.stdout + "\n" + proc.stderr
    leg = Leg("client", revision, proc.returncode, output, _parse(proc.stdout))
    # The suite starts every client scenario at once; on a small machine the timing check
    # of sse-retry (500 ms +-) can miss under that load (a failure or a warning). As the
    # suite's notes advise, a scenario that is not clean and not an expected failure is
    # run once more on its own before it counts.
    expected = _expected_failures()
    rerun = [s.name for s in leg.scenarios if not s.clean and s.name not in expected]
    for name in rerun:
        again = _suite(["client", "--command", command, "--scenario", name, "--spec-version",
                        revision, "--timeout", "60000", "-o", str(outdir / "rerun")], timeout)
        # A single scenario's "Passed: x/y" summary goes to stderr, not stdout.
        alone_output = again.stdout + "\n" + again.stderr
        leg.output += f"\n== rerun of {name} alone: exit {again.returncode}\n" + alone_output
        single = _SINGLE.search(alone_output)
        alone = {name: Scenario(name, int(single.group(1)), int(single.group(2)),
                                int(single.group(3) or 0))} if single else {}
        if again.returncode == 0 and name in alone:
            leg.scenarios = [alone[name] if s.name == name else s for s in leg.scenarios]
    if rerun and all(s.clean for s in leg.scenarios if s.name not in expected):
        leg.exit_code = 0
    return leg
