"""Cold start, side by side: spawn a stdio server, time to its first tools/call answer.

    python benchmarks/coldstart.py                       # mcpsync (this venv) vs official
    python benchmarks/coldstart.py --nongpl PYTHON       # add a venv with
                                                         #   jsonschema[format-nongpl] (Jupyter's)
    python benchmarks/coldstart.py --baseline DIR        # add an older mcpsync checkout
    python benchmarks/coldstart.py --bare PYTHON         # add a venv holding only mcpsync's
                                                         #   runtime dependencies
    python benchmarks/coldstart.py --rounds 9

Why a separate script: cold start is dominated by imports, and what is imported depends on
the environment. Jupyter installs ``jsonschema[format-nongpl]``, whose import builds a Lark
grammar (``rfc3987-syntax``) for about a second; a server that imports jsonschema before
its first answer pays that in a notebook. Each target is spawned fresh per round (rounds
interleaved, one warm-up spawn each so bytecode caches exist) and medians are reported,
with ratios to the official SDK measured in the same run. Also timed: ``import mcpsync``
alone, the CPU time the server process used (user + system: it moves much less than wall
time when the machine is shared), and whether the server imported jsonschema before answering.

Bytecode: a package installed with pip has its ``.pyc`` files compiled at install time.
mcpsync runs here from a checkout, so the children are started without
``PYTHONDONTWRITEBYTECODE`` (set in some CI and container images) and the warm-up spawn
writes the checkout's ``__pycache__``; otherwise every spawn would compile mcpsync from
source while the official SDK loads its compiled files, and the comparison would measure
the compiler. The repo's own venv holds mcpsync as an editable install, whose import hook
runs at every interpreter start: ``--bare`` measures what a user's venv does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SERVERS = os.path.join(HERE, "servers")
PEERS = os.environ.get("MCPSYNC_PEERS_DIR") or os.path.expanduser("~/.cache/mcpsync-peers")
PY_OFFICIAL = os.path.join(PEERS, "py-mcp", "bin", "python")
LEGACY = "2025-11-25"
TIMEOUT = 60.0

# A server that says, on stderr, whether jsonschema was imported when it answered.
_PROBE_TAIL = ("import atexit, sys\n"
               "atexit.register(lambda: sys.stderr.write("
               "'JSONSCHEMA=%s\\n' % ('jsonschema' in sys.modules)))\n")


@dataclass
class Target:
    name: str
    python: str
    script: str
    pythonpath: str | None = None
    importable: str | None = None  # module timed by "import X" alone
    cold: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    imports: list[float] = field(default_factory=list)
    jsonschema: bool | None = None


def _env(target: Target) -> dict[str, str]:
    """The child's environment. Children run in ``SERVERS`` (``python -c`` puts the working
    directory first on ``sys.path``, which would shadow ``--baseline`` from the repo root)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # see the module text: bytecode as installed
    if target.pythonpath:
        env["PYTHONPATH"] = target.pythonpath
    return env


def _line(obj: dict[str, object]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def spawn_to_first_answer(target: Target) -> tuple[float, float, bool | None]:
    """Seconds from spawn to the tools/call result line, the server's CPU seconds (until
    it exited), and whether jsonschema was loaded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = _PROBE_TAIL + f"import runpy\nrunpy.run_path({target.script!r}, run_name='__main__')\n"
    start = time.perf_counter()
    proc = subprocess.Popen([target.python, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(target), cwd=SERVERS)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "coldstart", "version": "1"}}}))
    proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    proc.stdin.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": "hi"}}}))
    proc.stdin.flush()
    elapsed = None
    for raw in proc.stdout:
        message = json.loads(raw)
        if message.get("id") == 2:
            elapsed = time.perf_counter() - start
            if "result" not in message:
                raise RuntimeError(f"{target.name}: {message}")
            break
    proc.stdin.close()  # end of input: the server exits
    proc.stdin = None
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    if elapsed is None:
        raise RuntimeError(f"{target.name}: no answer; stderr: {err.decode()[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = err.decode()
    loaded = True if "JSONSCHEMA=True" in text else False if "JSONSCHEMA=False" in text else None
    return elapsed, cpu, loaded


def import_time(target: Target) -> float:
    start = time.perf_counter()
    subprocess.run([target.python, "-c", f"import {target.importable}"], check=True,
                   env=_env(target), cwd=SERVERS)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--nongpl", metavar="PYTHON",
                        help="a Python whose environment has jsonschema[format-nongpl]")
    parser.add_argument("--baseline", metavar="DIR",
                        help="a directory holding an older mcpsync package, for comparison")
    parser.add_argument("--bare", metavar="PYTHON",
                        help="a Python whose venv holds only mcpsync's runtime dependencies")
    args = parser.parse_args()
    bench = os.path.join(SERVERS, "bench_mcpsync.py")
    targets = [Target("mcpsync", sys.executable, bench, REPO, "mcpsync")]
    if args.bare:
        targets.append(Target("mcpsync, bare venv", args.bare, bench, REPO, "mcpsync"))
    if args.nongpl:
        targets.append(Target("mcpsync, format-nongpl venv", args.nongpl, bench, REPO,
                              "mcpsync"))
    if args.baseline:
        targets.append(Target("mcpsync before", sys.executable, bench, args.baseline, "mcpsync"))
        if args.nongpl:
            targets.append(Target("mcpsync before, format-nongpl venv", args.nongpl, bench,
                                  args.baseline, "mcpsync"))
    if os.path.exists(PY_OFFICIAL):
        targets.append(Target("official SDK", PY_OFFICIAL,
                              os.path.join(SERVERS, "bench_official.py"), None, "mcp"))
    for target in targets:  # warm-up: bytecode caches written, files in the page cache
        spawn_to_first_answer(target)
    for index in range(args.rounds):
        for target in targets[index % len(targets):] + targets[:index % len(targets)]:
            elapsed, cpu, loaded = spawn_to_first_answer(target)
            target.cold.append(elapsed)
            target.cpu.append(cpu)
            target.jsonschema = loaded
            target.imports.append(import_time(target))
    official = next((t for t in targets if t.name == "official SDK"), None)
    base = statistics.median(official.cold) if official else None
    base_cpu = statistics.median(official.cpu) if official else None
    print(f"Cold start, {args.rounds} interleaved rounds, medians "
          f"(Python {sys.version.split()[0]}).\n")
    print("| target | spawn → first tools/call result (ms) | ÷ official | server CPU (ms) "
          "| ÷ official | import alone (ms) | jsonschema loaded at exit |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for target in targets:
        cold = statistics.median(target.cold)
        cpu = statistics.median(target.cpu)
        ratio = f"{cold / base:.2f}×" if base else "n/a"
        cpu_ratio = f"{cpu / base_cpu:.2f}×" if base_cpu else "n/a"
        print(f"| {target.name} | {cold * 1000:,.0f} | {ratio} | {cpu * 1000:,.0f} | "
              f"{cpu_ratio} | {statistics.median(target.imports) * 1000:,.0f} | "
              f"{target.jsonschema} |")


if __name__ == "__main__":
    main()
