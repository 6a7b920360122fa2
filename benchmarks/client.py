"""Clients side by side: mcpsync's ``Client`` vs the official ``mcp.Client`` (2.3.0) and
fastmcp's ``Client``, against the cheapest correct server, so the client dominates.

    python benchmarks/client.py              # 3 interleaved rounds
    python benchmarks/client.py --quick      # 1 round, fewer calls
    python benchmarks/client.py --out FILE   # also write the markdown table
    python benchmarks/client.py --compare /work/main   # also mcpsync from another checkout

Per client and transport (stdio: ``servers/floor.py`` as the child; HTTP: the same floor as
a WSGI app under gunicorn gthread): latency of one call at a time (p50/p99), the client
process's CPU time per call, and calls per second from 8 threads sharing one client (8
concurrent tasks for the asyncio clients). Each client runs in its own interpreter (its own
venv: the official SDK's from ``scripts/install-peers``, fastmcp's from
``benchmarks/install``; a missing one is left out and said so). Rounds are interleaved in
rotated order; medians are reported, and ratios to the official client measured in the
same run. The client is pinned to one core and the server to the other, as in ``run.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.environ.get("MCPSYNC_PEERS_DIR") or os.path.expanduser("~/.cache/mcpsync-peers")
PYTHONS = {
    "mcpsync": sys.executable,
    "official": os.path.join(PEERS, "py-mcp", "bin", "python"),
    "fastmcp": os.path.join(PEERS, "bench-fastmcp", "bin", "python"),
}
FLOOR = os.path.join(HERE, "servers", "floor.py")
DRIVE = os.path.join(HERE, "clients", "drive.py")
SERVER_CPU, CLIENT_CPU = 1, 0
BEFORE = "mcpsync@before"  # the --compare checkout's mcpsync
METRICS = ("latency_p50_us", "latency_p99_us", "cpu_per_call_us", "seq_calls_per_s",
           "par_calls_per_s")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pin(cpu: int) -> list[str]:
    return ["taskset", "-c", str(cpu)] if (os.cpu_count() or 1) > 1 and _has("taskset") else []


def _has(program: str) -> bool:
    from shutil import which

    return which(program) is not None


@contextmanager
def floor_http() -> Iterator[str]:
    """The floor WSGI app under gunicorn gthread on a free port; stopped by its PID."""
    import socket
    import time

    port = _free_port()
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    proc = subprocess.Popen([*_pin(SERVER_CPU), gunicorn, "-k", "gthread", "--threads", "16",
                             "-w", "1", "-b", f"127.0.0.1:{port}", "--chdir",
                             os.path.join(HERE, "servers"), "floor:app"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the floor HTTP server did not start") from None
                try:  # a bounded pause that also notices the server dying
                    proc.wait(0.05)
                    raise RuntimeError("the floor HTTP server exited") from None
                except subprocess.TimeoutExpired:
                    pass
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def run_one(client: str, transport: str, target: str, calls: int,
            threads: int, checkout: str | None = None) -> dict[str, float]:
    """One driver run. ``checkout``: run mcpsync from that source tree (a before/after
    comparison in the same run) instead of the one this interpreter imports."""
    env = dict(os.environ)
    if client != "mcpsync":
        env.pop("PYTHONPATH", None)
    elif checkout is not None:
        env["PYTHONPATH"] = checkout
    # Over stdio the client starts the floor itself, so the child shares the client's core
    # (the same for every client; the floor's cost is small). Over HTTP they are apart.
    out = subprocess.run([*_pin(CLIENT_CPU), PYTHONS[client], DRIVE, "--client", client,
                          "--transport", transport, "--target", target, "--calls", str(calls),
                          "--threads", str(threads)],
                         capture_output=True, text=True, timeout=600, env=env,
                         cwd=checkout)
    if out.returncode != 0:
        raise RuntimeError(f"{client}/{transport} failed:\n{out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--out")
    parser.add_argument("--compare", metavar="CHECKOUT",
                        help="also run mcpsync from this source tree (e.g. the code before a "
                             "change), as the client 'mcpsync@before'")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    calls = args.calls or (400 if args.quick else 2000)
    clients = [c for c, python in PYTHONS.items() if os.access(python, os.X_OK)]
    missing = sorted(set(PYTHONS) - set(clients))
    checkouts: dict[str, str | None] = {client: None for client in clients}
    # mcpsync as in the tree this script is in, not whichever one the venv has installed.
    checkouts["mcpsync"] = os.path.dirname(HERE)
    if args.compare:
        clients.insert(1, BEFORE)
        checkouts[BEFORE] = os.path.abspath(args.compare)
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    with floor_http() as url:
        for round_no in range(rounds):
            order = clients[round_no % len(clients):] + clients[:round_no % len(clients)]
            for client in order:
                for transport, target in (("stdio", FLOOR), ("http", url)):
                    result = run_one("mcpsync" if client == BEFORE else client, transport,
                                     target, calls, 8, checkouts[client])
                    results.setdefault((client, transport), []).append(result)
                    print(f"round {round_no + 1} {client}/{transport}: "
                          f"{result['cpu_per_call_us']:.0f} µs CPU/call", file=sys.stderr)
    lines = [f"Clients against the floor server, {rounds} round(s) × {calls} calls, medians.",
             "", "| client | transport | p50 latency (µs) | p99 (µs) | client CPU/call (µs) | "
             "calls/s, 1 at a time | calls/s, 8 threads | CPU ÷ official |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for transport in ("stdio", "http"):
        base = results.get(("official", transport))
        base_cpu = statistics.median(r["cpu_per_call_us"] for r in base) if base else None
        for client in clients:
            runs = results[(client, transport)]
            med = {m: statistics.median(r[m] for r in runs) for m in METRICS}
            ratio = f"{med['cpu_per_call_us'] / base_cpu:.2f}×" if base_cpu else "n/a"
            lines.append(f"| {client} | {transport} | {med['latency_p50_us']:,.0f} | "
                         f"{med['latency_p99_us']:,.0f} | {med['cpu_per_call_us']:,.0f} | "
                         f"{med['seq_calls_per_s']:,.0f} | {med['par_calls_per_s']:,.0f} | "
                         f"{ratio} |")
    if missing:
        lines += ["", f"Not measured (not installed): {', '.join(missing)}."]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(report + "\n")


if __name__ == "__main__":
    main()
