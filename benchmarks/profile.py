"""Profile mcpsync's hot path under the echo load of benchmarks/run.py (py-spy sampling).

    python benchmarks/profile.py                 # stdio and gunicorn gthread, 8 s each
    python benchmarks/profile.py --seconds 4 --inflight 64 --only stdio
    python benchmarks/profile.py --targets mcpsync-granian --era 2025-11-25   # any run.py key

Starts the mcpsync benchmark server exactly as run.py does (pinned to its own core),
attaches ``py-spy record --format raw`` (``--gil``: only the thread holding the GIL, so
the numbers are the Python CPU the server burns; known blocking leaves are dropped too), drives the same echo load, and prints the functions with the
most self time and most inclusive time, grouped by function (line numbers dropped).
py-spy comes from the bench venv (benchmarks/install).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run

PY_SPY = os.path.join(run.PEERS, "bench-fastmcp", "bin", "py-spy")


def frame_key(frame: str) -> str:
    """``func (path/to/file.py:123)`` -> ``func (file.py)`` (repo paths kept relative)."""
    name, _, loc = frame.partition(" (")
    path = loc.rsplit(":", 1)[0]
    if "/mcpsync/" in path:
        path = "mcpsync/" + path.split("/mcpsync/", 1)[1]
    else:
        path = os.path.basename(path)
    return f"{name} ({path})"


# Leaf frames that are a thread parked in a blocking call, not CPU (py-spy's idle detection
# misses some of them); stacks ending in one are dropped.
WAITS = ("Condition.wait ", "Event.wait ", "_worker (thread.py)", "EpollSelector.select ",
         "_PollLikeSelector.unregister ", "StreamTransport._wait_readable ", "Thread.join ",
         "select (selectors.py)", "Semaphore.acquire ", "Queue.get ", "_wait_for_tstate_lock ")


def summarize(raw: str, top: int) -> str:
    self_t: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [frame_key(f) for f in stack.split(";") if f and not f.startswith(("process ", "thread "))]
        if not frames or frames[-1].startswith(WAITS):
            continue
        total += n
        self_t[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    if not total:
        return "(no samples)\n"
    out = [f"{total} samples (non-idle)", "", "self time:"]
    out += [f"  {n / total * 100:5.1f}%  {f}" for f, n in self_t.most_common(top)]
    out += ["", "inclusive time (mcpsync frames and the server/stdlib frames above them):"]
    out += [f"  {n / total * 100:5.1f}%  {f}" for f, n in incl.most_common(top * 2)]
    return "\n".join(out) + "\n"


def profile(key: str, seconds: float, inflight: int, top: int, outdir: str,
            era: str = run.MODERN) -> str:
    t = next(t for t in run.TARGETS if t.key == key)
    with tempfile.TemporaryDirectory(prefix="mcpsync-prof-") as logdir:
        proc, port, _ = run.start(t, logdir)
        try:
            run.load(t, proc, port, run.ECHO, inflight, 0.5, 60, era)  # warm-up
            raw = os.path.join(outdir, f"{key}.raw.txt")
            spy = subprocess.Popen([PY_SPY, "record", "--format", "raw", "--rate", "500",
                                    "--subprocesses", "--gil", "--duration", str(int(seconds)),
                                    "--pid", str(proc.pid), "--output", raw],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.0)  # let py-spy attach
            res = run.load(t, proc, port, run.ECHO, inflight, seconds, 120, era)
            _, err = spy.communicate(timeout=60)
            if spy.returncode != 0 or not os.path.exists(raw):
                return f"py-spy failed (rc={spy.returncode}): {err.decode(errors='replace')[-500:]}\n"
        finally:
            proc.stop()
        with open(raw) as f:
            text = f.read()
    return (f"== {t.label} ({era if t.transport == 'http' else 'stdio'}): echo, {inflight} in flight, {res.rate:,.0f} req/s while sampled "
            f"(raw stacks: {raw})\n" + summarize(text, top))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--inflight", type=int, default=8)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--only", choices=["stdio", "http"], default=None)
    ap.add_argument("--targets", default="",
                    help="comma-separated run.py target keys (overrides --only)")
    ap.add_argument("--era", default=run.MODERN, choices=[run.MODERN, run.LEGACY],
                    help="the HTTP wire (2025-11-25: one session per in-flight slot)")
    ap.add_argument("--outdir", default=tempfile.gettempdir())
    args = ap.parse_args()
    if not os.path.exists(PY_SPY):
        print(f"py-spy not found at {PY_SPY}; run benchmarks/install", file=sys.stderr)
        return 1
    if run.PIN:
        os.sched_setaffinity(0, {run.LOADGEN_CPU})
    keys = {"stdio": ["mcpsync-stdio"], "http": ["mcpsync-gunicorn"]}.get(
        args.only or "", ["mcpsync-stdio", "mcpsync-gunicorn"])
    if args.targets:
        keys = [k for k in args.targets.split(",") if k]
    for key in keys:
        print(profile(key, args.seconds, args.inflight, args.top, args.outdir, args.era),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
