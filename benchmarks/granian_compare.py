"""The two HTTP figures issue 34 set, for this tree and older ones, in the same rounds.

    python benchmarks/granian_compare.py --tree before=DIR [--tree other=DIR] [--rounds 5]
        [--legacy] [--burn 10,20,30]

One process under granian (256 blocking threads, run.py's command line), the raw WSGI floor
in the same rounds: server CPU per 2026-07-28 echo at 64 in flight (and its ratio to the
floor's), and block(50 ms) at 256 in flight as % of ideal (``max_concurrent_handlers=256``),
both eras. A tree is a directory holding an ``mcpsync`` package (``git archive REV mcpsync``
unpacked): its server runs with that package first on the path. Rounds are interleaved and
every figure is the median over rounds, with the spread (half the range, % of the median).
The full run.py measures much more; this one answers "did the hot path move" in ~2 minutes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # the same load generator, pinning and process handling


def measure(t: run.Target, ph: run.Phases, logdir: str) -> dict[str, float]:
    """Echo CPU at 64 in flight per era; block(50) at 256 in flight per era (mcpsync only)."""
    res: dict[str, float] = {}
    proc, port, _ = run.start(t, logdir)
    try:
        for era in t.eras:
            p = run.prefix(t, era)
            run.load(t, proc, port, run.ECHO, 64, ph.warm, ph.limit, era)
            c0 = run.cpu_seconds(proc.pid)
            lo = run.load(t, proc, port, run.ECHO, 64, ph.dur, ph.limit, era)
            res[f"{p}cpu64"] = (run.cpu_seconds(proc.pid) - c0) / lo.done * 1e6
            res[f"{p}rps64"] = lo.rate
    finally:
        proc.stop()
    if t.block:
        proc, port, _ = run.start(t, logdir, t.block_env)
        try:
            for era in t.eras:
                p = run.prefix(t, era)
                run.load(t, proc, port, run.BLOCK, 256, ph.warm, ph.limit, era)
                r = run.load(t, proc, port, run.BLOCK, 256, ph.block_dur, ph.limit, era).rate
                res[f"{p}block256"] = 100.0 * r / (256 * 1000.0 / run.BLOCK_MS)
        finally:
            proc.stop()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--legacy", action="store_true", help="also the 2025-11-25 session wire")
    ap.add_argument("--burn", default="", metavar="US[,US...]",
                    help="also the floor plus US µs of Python per request "
                         "(servers/burn_wsgi.py): what a per-request cost becomes under granian")
    args = ap.parse_args()
    if run.PIN:
        os.sched_setaffinity(0, {run.LOADGEN_CPU})
    eras = (run.MODERN, run.LEGACY) if args.legacy else (run.MODERN,)
    env = run.GRANIAN_ENV
    targets = [run.Target("floor", "raw floor", "http", "raw", run._granian("raw_wsgi:app"),
                          env=env, block=False, server="granian"),
               run.Target("now", "mcpsync", "http", "mcpsync", run._granian("bench_mcpsync:app"),
                          env=env, block_env=run.MAX256, eras=eras, server="granian")]
    for us in filter(None, args.burn.split(",")):
        targets.append(run.Target(f"burn{us}", f"floor + {us} µs", "http", "raw",
                                  run._granian("burn_wsgi:app"), env={**env, "BURN_US": us},
                                  block=False, server="granian"))
    for spec in args.tree:
        name, _, tree = spec.partition("=")
        path = os.path.abspath(tree) + os.pathsep + env["PYTHONPATH"]
        targets.append(run.Target(name, name, "http", "mcpsync",
                                  run._granian("bench_mcpsync:app"), env={"PYTHONPATH": path},
                                  block_env=run.MAX256, eras=eras, server="granian"))
    ph = run.Phases(warm=0.4, dur=1.5, block_dur=1.5, limit=60)
    results: dict[str, list[dict[str, float]]] = {t.key: [] for t in targets}
    with tempfile.TemporaryDirectory(prefix="mcpsync-bench-") as logdir:
        for r in range(args.rounds):
            k = r % len(targets)
            for t in targets[k:] + targets[:k]:
                t0 = time.perf_counter()
                res = measure(t, ph, logdir)
                results[t.key].append(res)
                print(f"round {r + 1} {t.key:8s} {time.perf_counter() - t0:4.1f}s "
                      + " ".join(f"{k}={v:.1f}" for k, v in sorted(res.items())),
                      file=sys.stderr, flush=True)
    floor = [r["cpu64"] for r in results["floor"]]
    print(f"floor cpu64 µs: median {statistics.median(floor):.1f} {spread(floor)}")
    for t in targets[1:]:
        rows = results[t.key]
        for key in sorted(rows[0]):
            vals = [r[key] for r in rows]
            print(f"{t.key:8s} {key:10s} median {statistics.median(vals):8.1f} {spread(vals)}"
                  f"  all: {', '.join(f'{v:.1f}' for v in vals)}")
        # the ratio to the floor of the same round, then its median
        for p in ("", "l_") if "l_cpu64" in rows[0] else ("",):
            ratios = [r[f"{p}cpu64"] / f for r, f in zip(rows, floor, strict=True)]
            print(f"{t.key:8s} {p}cpu64 ÷ floor: median {statistics.median(ratios):.2f}× "
                  f"{spread(ratios)}  all: {', '.join(f'{v:.2f}' for v in ratios)}")
    return 0


def spread(vals: list[float]) -> str:
    m = statistics.median(vals)
    return f"(±{50 * (max(vals) - min(vals)) / m:.0f}%)" if m else ""


if __name__ == "__main__":
    sys.exit(main())
