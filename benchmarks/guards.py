"""What each guard of ``mcpsync.middleware`` costs per call, with its state in this
process's memory and in Redis, as a ratio to the same call with no guard.

    python benchmarks/guards.py               # 5 interleaved rounds of 2000 calls
    python benchmarks/guards.py --quick       # 2 rounds of 300 calls
    python benchmarks/guards.py --http        # over HTTP (the WSGI app on a thread)

One server, one client (``Client.memory`` by default: the guard's cost is not hidden behind
a socket), one ``echo`` tool (read-only, so the cache may answer it), calls made one after
another. Each row adds one guard, set so that it never refuses: ``RateLimit("1000000/
minute")``, ``ConcurrencyLimit(1000)``, ``ResponseLimit(1 MiB)``, ``ResponseCache(60)``
(every call after the first a hit), ``AuditLog`` to a logger whose handler formats each
record and writes it to ``/dev/null``. Redis is a ``redis-server`` started on a free port
(skipped when none is installed). The rounds interleave the rows, so drift in the machine
touches every row alike; reported: the median over rounds of microseconds per call, the
ratio to the median of "none", and the guard's own cost (the difference).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcpsync import Client, Server, ToolAnnotations  # noqa: E402
from mcpsync.middleware import (  # noqa: E402
    AuditLog,
    ConcurrencyLimit,
    RateLimit,
    ResponseCache,
    ResponseLimit,
)

Guard = Callable[..., Any]


def _audit_logger() -> logging.Logger:
    logger = logging.getLogger("bench.audit")
    handler = logging.StreamHandler(open(os.devnull, "w"))
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def rows(redis_url: str | None) -> list[tuple[str, str, Callable[[], Guard | None]]]:
    """(guard, storage, factory) for every row; the Redis rows only with a Redis."""
    unique = os.urandom(4).hex()
    made: list[tuple[str, str, Callable[[], Guard | None]]] = [
        ("none", "-", lambda: None),
        ("RateLimit", "memory", lambda: RateLimit("1000000/minute")),
        ("ConcurrencyLimit", "memory", lambda: ConcurrencyLimit(1000)),
        ("ResponseLimit", "-", lambda: ResponseLimit(1 << 20)),
        ("ResponseCache (hits)", "memory", lambda: ResponseCache(60)),
        ("AuditLog", "-", lambda: AuditLog(_audit_logger())),
    ]
    if redis_url is not None:
        url = redis_url
        made[2:2] = [("RateLimit", "redis", lambda: RateLimit(
            "1000000/minute", storage=url, name=f"bench-rate-{unique}"))]
        made[4:4] = [("ConcurrencyLimit", "redis", lambda: ConcurrencyLimit(
            1000, storage=url, name=f"bench-conc-{unique}"))]
        made.insert(7, ("ResponseCache (hits)", "redis", lambda: ResponseCache(
            60, storage=url, name=f"bench-cache-{unique}")))
    return made


def build(guard: Guard | None) -> Server:
    server = Server("bench")
    if guard is not None:
        server.add_middleware(guard)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        return text

    return server


@contextlib.contextmanager
def connected(server: Server, http: bool) -> Iterator[Client]:
    if not http:
        with Client.memory(server) as client:
            yield client
        return
    from tests.serving import RunningServer

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, \
            Client.http(running.base + "/mcp") as client:
        yield client


def per_call(client: Client, calls: int) -> float:
    """Microseconds per call, ``calls`` sequential ``echo`` calls (after a warm-up)."""
    for _ in range(20):
        client.call_tool("echo", {"text": "hi"})
    started = time.perf_counter()
    for _ in range(calls):
        client.call_tool("echo", {"text": "hi"})
    return (time.perf_counter() - started) / calls * 1e6


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    if shutil.which("redis-server") is None and not os.path.exists("/usr/bin/redis-server"):
        print("(no redis-server: the Redis rows are skipped)", file=sys.stderr)
        yield None
        return
    from tests.services import RedisServer

    with RedisServer() as server:
        yield server.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--calls", type=int)
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 5)
    calls = args.calls or (300 if args.quick else 2000)
    with redis_server() as url:
        table = rows(url)
        samples: dict[int, list[float]] = {i: [] for i in range(len(table))}
        for _ in range(rounds):
            for index, (_, _, factory) in enumerate(table):
                with connected(build(factory()), args.http) as client:
                    samples[index].append(per_call(client, calls))
    base = statistics.median(samples[0])
    transport = "HTTP (2026-07-28, werkzeug thread)" if args.http else "memory"
    print(f"guards: {calls} sequential echo calls x {rounds} rounds, {transport}, "
          f"median per call\n")
    print("| guard | storage | µs per call | ratio to none | the guard's own µs |")
    print("|---|---|---|---|---|")
    for index, (name, storage, _) in enumerate(table):
        median = statistics.median(samples[index])
        print(f"| {name} | {storage} | {median:.0f} | {median / base:.2f} | "
              f"{median - base:+.0f} |")


if __name__ == "__main__":
    main()
