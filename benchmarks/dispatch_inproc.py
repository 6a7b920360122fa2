"""In-process cost of one ``tools/call`` echo through mcpsync's dispatch (no subprocess).

What it measures: the server-side path a request takes once the engine has framed it —
``jsonrpc.decode`` of the line, the session's ``_on_request`` (lifecycle, ``run_handler``,
scope check, the task-aware ``tools/call``, the tool registry, the typed binding's
validation, call and encoding) and ``jsonrpc.encode`` of the answer — for the bench server
of ``benchmarks/run.py`` (``servers/bench_mcpsync.py``). Threads and the transport are left
out, so the number is CPU time per call that survives a loaded machine:
``time.process_time()`` over N calls, several rounds, the median.

    PYTHONPATH=$PWD python benchmarks/dispatch_inproc.py [-n 50000] [--rounds 5]
        [--profile] [--compare DIR]

``--compare DIR`` runs the same measurement against the mcpsync tree in DIR (an older
checkout) in a child process, rounds interleaved with this tree's, and prints both
medians and their ratio. ``--profile`` prints a cProfile of one round instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# benchmarks/profile.py would shadow the standard library's ``profile`` (cProfile's base).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import cProfile  # noqa: E402
import pstats  # noqa: E402


def _setup() -> Any:
    """The bench server, one initialized session over a memory pair, and a step function
    that serves one encoded request line and returns the encoded answer."""
    sys.path.insert(0, str(HERE / "servers"))
    import bench_mcpsync

    from mcpsync.engine.connection import InboundRequest
    from mcpsync.protocol import jsonrpc
    from mcpsync.transports.memory import memory_pair

    server = bench_mcpsync.server
    client_end, server_end = memory_pair()
    session = server.connect(server_end)
    channel = session.connection
    context = channel.transport_context
    init = InboundRequest(channel, 0, "initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}, context)
    session._on_request(init)
    session._on_notification(jsonrpc.Notification("notifications/initialized", {}))

    def step(line: bytes) -> bytes:
        (message,) = jsonrpc.decode(line)
        inbound = InboundRequest(channel, message.id, message.method,  # type: ignore[union-attr]
                                 message.params, context)  # type: ignore[union-attr]
        result = session._on_request(inbound)
        return jsonrpc.encode(jsonrpc.Response(inbound.id, result))

    return step, client_end


def _lines(n: int) -> list[bytes]:
    return [json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": f"hello {i}"}}}
                       ).encode() for i in range(n)]


def _round(step: Any, lines: list[bytes]) -> float:
    start = time.process_time()
    for line in lines:
        step(line)
    return (time.process_time() - start) / len(lines) * 1e6


def _child(n: int) -> None:
    """The --compare child: one round per line read from stdin, µs per call written back."""
    step, _ = _setup()
    lines = _lines(n)
    step(lines[0])
    for _ in sys.stdin:
        print(f"{_round(step, lines):.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--compare", metavar="DIR")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.n)
        return
    step, _ = _setup()
    lines = _lines(args.n)
    sample = step(lines[0])
    assert b'"text":"hello 0"' in sample, sample
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(_round, step, lines)
        stats = pstats.Stats(profiler)
        print(f"{stats.total_calls / args.n:.1f} function calls per echo")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(30)
        return
    other = None
    if args.compare:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(args.compare)}
        other = subprocess.Popen([sys.executable, __file__, "--child", "-n", str(args.n)],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
    mine: list[float] = []
    theirs: list[float] = []
    try:
        for _ in range(args.rounds):
            mine.append(_round(step, lines))
            if other is not None:
                assert other.stdin is not None and other.stdout is not None
                other.stdin.write("go\n")
                other.stdin.flush()
                theirs.append(float(other.stdout.readline()))
    finally:
        if other is not None:
            assert other.stdin is not None
            other.stdin.close()
            other.wait(timeout=30)
    print(f"this tree:    {statistics.median(mine):7.2f} µs/call  (rounds: "
          f"{', '.join(f'{v:.2f}' for v in mine)})")
    if theirs:
        print(f"{args.compare}: {statistics.median(theirs):7.2f} µs/call  (rounds: "
              f"{', '.join(f'{v:.2f}' for v in theirs)})")
        print(f"ratio this/compare: {statistics.median(mine) / statistics.median(theirs):.3f}")


if __name__ == "__main__":
    main()
