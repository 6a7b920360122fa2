"""mcpsync "spine" benchmark over real stdio.

    python benchmarks/spine.py           # full run (5 rounds per measurement)
    python benchmarks/spine.py --quick   # smoke run (2 rounds, fewer calls)

Spawns benchmarks/servers/spine_server.py with ``Client.stdio`` and prints a markdown
table (median, min, max over the rounds). Every wait is bounded; a watchdog aborts the
process (with tracebacks) if the whole run exceeds its budget.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import mcpsync

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "servers", "spine_server.py")
COMMAND = [sys.executable, SERVER]
CALL_TIMEOUT = 30.0  # per-call deadline for calls expected to succeed
JOIN_TIMEOUT = 60.0  # bound on waiting for a batch of worker threads


class BenchError(Exception):
    pass


def connect() -> mcpsync.Client:
    return mcpsync.Client.stdio(COMMAND, timeout=CALL_TIMEOUT)


def text_of(result: mcpsync.CallToolResult) -> str:
    if result.is_error:
        raise BenchError(f"tool error: {result}")
    return "".join(getattr(c, "text", "") for c in result.content)


def run_threads(n: int, work: Callable[[int], None]) -> float:
    """Run ``work(i)`` on ``n`` threads released together; return the wall time (s)."""
    barrier = threading.Barrier(n + 1, timeout=JOIN_TIMEOUT)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def body(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    deadline = time.monotonic() + JOIN_TIMEOUT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    wall = time.perf_counter() - start
    alive = sum(t.is_alive() for t in threads)
    if alive:
        raise BenchError(f"{alive}/{n} threads still running after {JOIN_TIMEOUT} s")
    if errors:
        raise BenchError(f"{len(errors)}/{n} calls failed; first: {errors[0]!r}")
    return wall


def summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[k]


# -- measurements -----------------------------------------------------------------------


def bench_concurrent(client: mcpsync.Client, n: int, ms: int, rounds: int) -> list[float]:
    def work(_: int) -> None:
        text_of(client.call_tool("block", {"ms": ms}, timeout=CALL_TIMEOUT))

    run_threads(n, work)  # warm-up (server handler threads, client waiters)
    return [run_threads(n, work) for _ in range(rounds)]


def wait_for_file(path: str, limit: float = 5.0) -> str | None:
    pause = threading.Event()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                data = f.read()
            if data:
                return data
        except FileNotFoundError:
            pass
        pause.wait(0.005)
    return None


def bench_cancel(client: mcpsync.Client, rounds: int, tmpdir: str) -> dict[str, Any]:
    from_catch: list[float] = []
    from_deadline: list[float] = []
    echo_ok = 0
    for r in range(rounds):
        marker = os.path.join(tmpdir, f"cancel-{r}.txt")
        t_start = time.monotonic()
        try:
            client.call_tool("cancellable", {"seconds": 30, "marker": marker}, timeout=0.2)
        except mcpsync.RequestTimeoutError:
            t0 = time.monotonic()
        else:
            raise BenchError("cancellable returned instead of timing out")
        data = wait_for_file(marker)
        if data is None:
            raise BenchError("the tool never saw the cancellation (no marker within 5 s)")
        t1 = float(data)
        from_catch.append(t1 - t0)
        from_deadline.append(t1 - (t_start + 0.2))
        if text_of(client.call_tool("echo", {"text": "after"}, timeout=5.0)) == "after":
            echo_ok += 1
    return {"from_catch": from_catch, "from_deadline": from_deadline, "echo_ok": echo_ok}


def bench_echo_sequential(client: mcpsync.Client, calls: int, rounds: int) -> dict[str, Any]:
    for _ in range(50):  # warm-up
        client.call_tool("echo", {"text": "w"})
    rates: list[float] = []
    p50s: list[float] = []
    p99s: list[float] = []
    for _ in range(rounds):
        lat: list[float] = []
        start = time.perf_counter()
        for _ in range(calls):
            t = time.perf_counter()
            text_of(client.call_tool("echo", {"text": "x"}, timeout=CALL_TIMEOUT))
            lat.append(time.perf_counter() - t)
        wall = time.perf_counter() - start
        lat.sort()
        rates.append(calls / wall)
        p50s.append(percentile(lat, 50) * 1000)
        p99s.append(percentile(lat, 99) * 1000)
    return {"rate": rates, "p50": p50s, "p99": p99s}


def bench_echo_parallel(
    client: mcpsync.Client, threads: int, calls: int, rounds: int
) -> list[float]:
    per_thread = max(1, calls // threads)

    def work(_: int) -> None:
        for _ in range(per_thread):
            text_of(client.call_tool("echo", {"text": "x"}, timeout=CALL_TIMEOUT))

    rates = []
    for _ in range(rounds):
        wall = run_threads(threads, work)
        rates.append(per_thread * threads / wall)
    return rates


def bench_cold_start(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        client = connect()
        try:
            tools = client.list_tools(timeout=CALL_TIMEOUT)
            times.append(time.perf_counter() - start)
            if {t.name for t in tools} != {"echo", "block", "cancellable"}:
                raise BenchError(f"unexpected tools: {[t.name for t in tools]}")
        finally:
            client.close()
    return times


# -- report -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer rounds/calls")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else 5
    seq_calls = 300 if args.quick else 2000
    par_calls = 512 if args.quick else 2048
    budget = 240 if args.quick else 900
    faulthandler.dump_traceback_later(budget, exit=True)  # hard bound on the whole run

    rows: list[tuple[str, str, str, str, str, str]] = []

    def row(name: str, values: list[float], fmt: str, target: str = "", verdict: str = "") -> None:
        med, lo, hi = summary(values)
        rows.append((name, fmt.format(med), fmt.format(lo), fmt.format(hi), target, verdict))

    print(f"mcpsync {mcpsync.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, rounds={rounds}{' (quick)' if args.quick else ''}",
          file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="mcpsync-spine-") as tmpdir:
        client = connect()
        try:
            # 1. concurrency
            walls = bench_concurrent(client, 64, 250, rounds)
            ratios = [w / 0.250 for w in walls]
            med_ratio = statistics.median(ratios)
            row("64 × block(250) wall (ms)", [w * 1000 for w in walls], "{:.0f}",
                "< 750 ms (3 × 250 ms)", "PASS" if med_ratio < 3 else "FAIL")
            row("64 × block(250) ratio to ideal", ratios, "{:.2f}×", "< 3×",
                "PASS" if med_ratio < 3 else "FAIL")
            walls = bench_concurrent(client, 256, 50, rounds)
            row("256 × block(50) wall (ms)", [w * 1000 for w in walls], "{:.0f}", "ideal 50 ms")
            row("256 × block(50) wall as % of ideal", [w / 0.050 * 100 for w in walls], "{:.0f}%",
                "100% = ideal")

            # 2. cancellation
            c = bench_cancel(client, rounds, tmpdir)
            med = statistics.median(c["from_catch"])
            row("cancel: tool sees it, after client catch (ms)",
                [v * 1000 for v in c["from_catch"]], "{:.1f}", "< 100 ms",
                "PASS" if med < 0.100 else "FAIL")
            row("cancel: tool sees it, after 0.2 s deadline (ms)",
                [v * 1000 for v in c["from_deadline"]], "{:.1f}", "info (includes timer slack)")
            rows.append(("client usable after timeout (echo ok)", f"{c['echo_ok']}/{rounds}",
                         "", "", "all", "PASS" if c["echo_ok"] == rounds else "FAIL"))

            # 3. echo throughput
            s = bench_echo_sequential(client, seq_calls, rounds)
            row(f"echo sequential, {seq_calls} calls (req/s)", s["rate"], "{:.0f}")
            row("echo latency p50, sequential (ms)", s["p50"], "{:.3f}")
            row("echo latency p99, sequential (ms)", s["p99"], "{:.3f}")
            for n in (8, 64):
                rates = bench_echo_parallel(client, n, par_calls, rounds)
                row(f"echo {n} in flight, {par_calls // n * n} calls (req/s)", rates, "{:.0f}")
        finally:
            client.close()

    # 4. cold start
    cold = bench_cold_start(rounds)
    row("cold start: Client.stdio → list_tools (ms)", [v * 1000 for v in cold], "{:.0f}")

    faulthandler.cancel_dump_traceback_later()
    header = ("Measurement", "median", "min", "max", "target", "result")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
