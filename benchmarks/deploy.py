"""The scale-out topology under load: nginx round-robin over two gunicorn instances
(``-k gthread --threads 8``), with 1, 2 and 4 workers per instance, in each era, with
Redis on and off. The processes and nginx's configuration are the deploy tests' own
(``tests/deploy/topology.py``, ``examples/deploy/nginx.conf.template``).

    python benchmarks/deploy.py                  # full run
    python benchmarks/deploy.py --quick          # 2 s per cell, workers 1 and 2
    python benchmarks/deploy.py --out FILE       # also write the markdown table

Cells:

- **modern / redis off**: the 2026-07-28 wire, tasks in one SQLite file; nothing shared
  but ``MCPSYNC_REQUEST_STATE_KEY``;
- **modern / redis on**, **handshake / redis on**: every instance on one ``redis-server``
  (sessions, events, tasks, the relay bus; needs ``mcpsync.redis``). The handshake era
  is not measured with Redis off: without a shared session store a round-robin balancer
  sends a session's requests to instances that never heard of it (404).

Each cell runs ``--concurrency`` client threads, each on its own keep-alive connection to
nginx, calling ``echo`` or ``block`` (a 50 ms blocking tool) for ``--duration`` seconds
after a warm-up (``--concurrency`` 16 for echo, ``--block-concurrency`` 64 for block,
more than two instances of one worker with 8 threads can run at once); reported: calls/s, p50 and p99 latency, and the ratio of calls/s to the
first row of the same tool. The load generator shares the machine with everything else:
on a small machine it is part of what is measured (see docs/deploying.md).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.deploy.topology import Topology  # noqa: E402

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
KEY = "benchmark-shared-key"
TOOLS = {"echo": {"text": "hello"}, "block": {"ms": 50}}


@dataclass
class Cell:
    era: str
    redis: bool
    workers: int
    tool: str
    calls: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Caller:
    """One client thread's keep-alive connection to nginx, speaking one era."""

    def __init__(self, port: int, era: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.era = era
        self.ids = itertools.count(1)
        self.session: str | None = None
        if era == LEGACY:
            _, headers = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                    "params": {"protocolVersion": LEGACY, "capabilities": {},
                                               "clientInfo": {"name": "bench", "version": "0"}}},
                                   {})
            self.session = headers["mcp-session-id"]
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {})

    def post(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        all_headers = {"Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream", **headers}
        if self.session is not None:
            all_headers.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": LEGACY})
        self.conn.request("POST", "/mcp", body=json.dumps(body), headers=all_headers)
        response = self.conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}

    def call(self, tool: str) -> bool:
        params: dict[str, Any] = {"name": tool, "arguments": TOOLS[tool]}
        headers: dict[str, str] = {}
        if self.era == MODERN:
            params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": {}}
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                       "Mcp-Name": tool}
        status, _ = self.post({"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
                               "params": params}, headers)
        return status == 200

    def close(self) -> None:
        self.conn.close()


def measure(topology: Topology, cell: Cell, concurrency: int, duration: float,
            warmup: float) -> None:
    lock = threading.Lock()
    start_at = threading.Event()
    deadline = [0.0, 0.0]  # measuring starts, stops

    def run() -> None:
        caller = Caller(topology.port, cell.era)
        try:
            start_at.wait(60)
            while True:
                t0 = time.monotonic()
                if t0 >= deadline[1]:
                    return
                ok = caller.call(cell.tool)
                t1 = time.monotonic()
                if t0 >= deadline[0]:
                    with lock:
                        cell.calls += ok
                        cell.errors += not ok
                        cell.latencies.append(t1 - t0)
        finally:
            caller.close()

    threads = [threading.Thread(target=run, name=f"bench-caller-{i}") for i in range(concurrency)]
    for thread in threads:
        thread.start()
    now = time.monotonic()
    deadline[:] = [now + warmup, now + warmup + duration]
    start_at.set()
    for thread in threads:
        thread.join(warmup + duration + 120)
    cell.seconds = duration


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--concurrency", type=int, default=16, help="client threads for echo")
    parser.add_argument("--block-concurrency", type=int, default=64,
                        help="client threads for block (more than 2 x 1 worker x 8 threads)")
    parser.add_argument("--workers", default=None, help="comma-separated, default 1,2,4")
    parser.add_argument("--no-redis", action="store_true", help="only the Redis-off cells")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    duration = args.duration or (2.0 if args.quick else 6.0)
    warmup = 0.5 if args.quick else 1.5
    workers = [int(w) for w in (args.workers or ("1,2" if args.quick else "1,2,4")).split(",")]

    redis_ok = not args.no_redis
    if redis_ok:
        try:
            import mcpsync.redis.bus  # noqa: F401
            from tests.services import RedisServer
        except ImportError as exc:
            print(f"Redis cells skipped: {exc}", file=sys.stderr)
            redis_ok = False
    configs = [(MODERN, False)] + ([(MODERN, True), (LEGACY, True)] if redis_ok else [])

    cells: list[Cell] = []
    load = os.getloadavg()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcpsync-bench-deploy-") as tmp:
        redis_server = RedisServer().start() if redis_ok else None
        try:
            for (era, redis), count in itertools.product(configs, workers):
                env = {"MCPSYNC_REQUEST_STATE_KEY": KEY}
                if redis:
                    assert redis_server is not None
                    env.update(MCPSYNC_DEPLOY_STORE="redis",
                               MCPSYNC_DEPLOY_REDIS_URL=redis_server.url,
                               MCPSYNC_DEPLOY_REDIS_PREFIX=f"bench:{era}:{count}")
                else:
                    env.update(MCPSYNC_DEPLOY_STORE="sqlite",
                               MCPSYNC_DEPLOY_SQLITE=str(Path(tmp) / f"tasks-{count}.db"))
                workdir = Path(tmp) / f"{era}-{redis}-{count}"
                workdir.mkdir()
                with Topology(workdir, workers=count, env=env) as topology:
                    for tool in TOOLS:
                        cell = Cell(era, redis, count, tool)
                        threads = args.concurrency if tool == "echo" else args.block_concurrency
                        measure(topology, cell, threads, duration, warmup)
                        cells.append(cell)
                        print(f"{era:10} redis={'on ' if redis else 'off'} workers={count} "
                              f"{tool:5} {cell.rate:8.1f}/s p50 {cell.quantile(0.5)*1000:6.1f} ms "
                              f"errors {cell.errors}", file=sys.stderr)
                    problems = topology.tracebacks()
                if problems:
                    print("\n".join(problems), file=sys.stderr)
                    return 1
        finally:
            if redis_server is not None:
                redis_server.close()

    report = render(cells, f"{args.concurrency} client threads for echo, "
                    f"{args.block_concurrency} for block", duration, load,
                    time.monotonic() - started)
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


def render(cells: list[Cell], concurrency: str, duration: float,
           load: tuple[float, float, float], wall: float) -> str:
    base = {tool: next(c.rate for c in cells if c.tool == tool) for tool in TOOLS}
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Run {when} on {os.cpu_count()} cores, load average before the run "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; {concurrency}, "
        f"{duration:.0f} s per cell, whole run {wall:.0f} s. Ratio: calls/s ÷ the first row "
        "of the same tool (modern, Redis off, 1 worker per instance).",
        "",
        "| era | Redis | workers per instance | tool | calls/s | ratio | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in sorted(cells, key=lambda c: (c.tool, c.era != MODERN, c.redis, c.workers)):
        lines.append(
            f"| {'2026-07-28' if cell.era == MODERN else '2025-11-25'} | "
            f"{'on' if cell.redis else 'off'} | {cell.workers} | {cell.tool} | "
            f"{cell.rate:.0f} | {cell.rate / base[cell.tool]:.2f} | "
            f"{cell.quantile(0.5) * 1000:.1f} | {cell.quantile(0.99) * 1000:.1f} | "
            f"{cell.errors} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
