"""Drive one MCP client against the floor server and print what it cost, as JSON.

Run by ``benchmarks/client.py`` under each client's own interpreter (mcpsync's venv, the
official SDK's, fastmcp's), so it imports only what the chosen client needs::

    drive.py --client mcpsync|official|fastmcp --transport stdio|http
             --target URL-or-path-to-floor.py --calls N --threads T

Three phases after one warm-up call: N calls one after another (latency percentiles, and
this process's CPU time per call: the server is another process, so it is not counted),
then N calls from T threads sharing the one client (T concurrent tasks for the asyncio
clients, the nearest equivalent), as throughput.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any


def _summary(latencies: list[float], cpu: float, wall_seq: float, calls: int,
             wall_par: float, par_calls: int) -> dict[str, float]:
    latencies.sort()
    return {
        "latency_p50_us": statistics.median(latencies) * 1e6,
        "latency_p99_us": latencies[int(len(latencies) * 0.99) - 1] * 1e6,
        "cpu_per_call_us": cpu / calls * 1e6,
        "seq_calls_per_s": calls / wall_seq,
        "par_calls_per_s": par_calls / wall_par,
    }


def drive_mcpsync(args: argparse.Namespace) -> dict[str, float]:
    from concurrent.futures import ThreadPoolExecutor

    from mcpsync import Client

    client = (Client.stdio([sys.executable, args.target]) if args.transport == "stdio"
              else Client.http(args.target))
    with client:
        client.call_tool("echo", {"text": "x"})
        latencies = []
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(args.calls):
            start = time.perf_counter()
            client.call_tool("echo", {"text": "x"})
            latencies.append(time.perf_counter() - start)
        wall_seq, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        per = args.calls // args.threads

        def worker(_: int) -> None:
            for _ in range(per):
                client.call_tool("echo", {"text": "x"})

        t1 = time.perf_counter()
        with ThreadPoolExecutor(args.threads, thread_name_prefix="bench-caller") as pool:
            list(pool.map(worker, range(args.threads)))
        wall_par = time.perf_counter() - t1
    return _summary(latencies, cpu, wall_seq, args.calls, wall_par, per * args.threads)


async def _drive_async(call: Callable[[], Awaitable[Any]],
                       args: argparse.Namespace) -> dict[str, float]:
    import asyncio

    await call()
    latencies = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    for _ in range(args.calls):
        start = time.perf_counter()
        await call()
        latencies.append(time.perf_counter() - start)
    wall_seq, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    per = args.calls // args.threads

    async def worker() -> None:
        for _ in range(per):
            await call()

    t1 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(args.threads)))
    wall_par = time.perf_counter() - t1
    return _summary(latencies, cpu, wall_seq, args.calls, wall_par, per * args.threads)


def drive_official(args: argparse.Namespace) -> dict[str, float]:
    import asyncio

    import mcp

    async def run() -> dict[str, float]:
        target: Any = (mcp.StdioServerParameters(command=sys.executable, args=[args.target])
                       if args.transport == "stdio" else args.target)
        async with mcp.Client(target) as client:
            return await _drive_async(lambda: client.call_tool("echo", {"text": "x"}), args)

    return asyncio.run(run())


def drive_fastmcp(args: argparse.Namespace) -> dict[str, float]:
    import asyncio

    import fastmcp
    from fastmcp.client.transports import StdioTransport

    async def run() -> dict[str, float]:
        target: Any = (StdioTransport(command=sys.executable, args=[args.target])
                       if args.transport == "stdio" else args.target)
        async with fastmcp.Client(target) as client:
            return await _drive_async(lambda: client.call_tool("echo", {"text": "x"}), args)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("mcpsync", "official", "fastmcp"), required=True)
    parser.add_argument("--transport", choices=("stdio", "http"), required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    drive = {"mcpsync": drive_mcpsync, "official": drive_official,
             "fastmcp": drive_fastmcp}[args.client]
    print(json.dumps(drive(args)))


if __name__ == "__main__":
    main()
