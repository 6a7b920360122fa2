"""Tasks on threads against tasks on Celery: create -> running latency and tasks/s.

    python benchmarks/celery_tasks.py           # 3 rounds
    python benchmarks/celery_tasks.py --quick   # 1 round, fewer tasks

One run, one machine, one ``redis-server`` (task store, and broker for Celery). The web
side is mcpsync's WSGI app under werkzeug's threaded server in this process, with a
``RedisTaskStore`` in every mode, so the only difference is the executor:

* ``threads``: ``ThreadExecutor`` (the default), the task on a thread of the web process;
* ``celery-1`` / ``celery-2``: ``CeleryExecutor``, one or two ``celery worker``
  processes (prefork pool, concurrency 2 each) importing the same server definition
  (tests/on_celery/app.py).

Measured through mcpsync's ``Client`` (2026-07-28, the tasks extension): *latency*, for
tasks started one at a time, from just before ``start_task`` to the moment the tool
started running (the tool writes ``time.time()`` to Redis: one clock, one machine), the
median; *throughput*, N tasks started back to back, until the last one's ``tasks/get``
says completed. Reported as ratios to ``threads``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import redis  # noqa: E402

from mcpsync import Client  # noqa: E402
from tests.on_celery.app import build  # noqa: E402
from tests.services import RedisServer  # noqa: E402
from tests.serving import RunningServer  # noqa: E402


def start_workers(url: str, prefix: str, count: int) -> list[subprocess.Popen[str]]:
    env = dict(os.environ, MCPSYNC_TEST_REDIS=url, MCPSYNC_TEST_PREFIX=prefix,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []
    for n in range(count):
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tests.on_celery.app:celery_app", "worker",
             "--pool", "prefork", "--concurrency", "2", "--loglevel", "INFO", "--hostname",
             f"bench{n}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        ready = threading.Event()
        # Read the worker's output for as long as it lives: a pipe nobody drains would
        # fill with its INFO lines (two per task) and stall the worker mid-run.
        threading.Thread(target=drain, args=(proc, ready), name=f"bench{n}-log",
                         daemon=True).start()
        if not ready.wait(60) or proc.poll() is not None:
            raise RuntimeError(f"celery worker bench{n} did not start")
        procs.append(proc)
    return procs


def drain(proc: subprocess.Popen[str], ready: threading.Event) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if " ready." in line:
            ready.set()
    ready.set()  # exited: the caller looks at poll()


def stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        os.killpg(proc.pid, 15)
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(20)


def measure(url: str, prefix: str, mode: str, latency_tasks: int,
            throughput_tasks: int) -> dict[str, float]:
    _, server = build(url, prefix, threads=mode == "threads")
    procs = [] if mode == "threads" else start_workers(url, prefix, int(mode[-1]))
    store = redis.Redis.from_url(url)
    try:
        with RunningServer(server.wsgi_app(path="/mcp")) as web, \
                Client.http(f"{web.base}/mcp", protocol_version="2026-07-28", timeout=120) as c:
            c.start_task("stamp", {"key": "warm"}).result(timeout=120)
            delays = []
            for n in range(latency_tasks):
                key = f"lat{n}"
                before = time.time()
                c.start_task("stamp", {"key": key}).result(timeout=120)
                delays.append(float(store.get(f"{prefix}:start:{key}") or 0) - before)
            began = time.perf_counter()
            handles = [c.start_task("stamp", {"key": f"tp{n}"})
                       for n in range(throughput_tasks)]
            for handle in handles:
                handle.result(timeout=300)
            elapsed = time.perf_counter() - began
    finally:
        stop(procs)
        server.close_tasks()
    return {"latency_ms": statistics.median(delays) * 1000,
            "tasks_per_s": throughput_tasks / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, latency_tasks, throughput_tasks = (1, 10, 30) if args.quick else (3, 30, 100)
    results: dict[str, list[dict[str, float]]] = {}
    with RedisServer() as server:
        for r in range(rounds):
            for mode in ("threads", "celery-1", "celery-2"):
                prefix = f"bench-{r}-{mode}"
                results.setdefault(mode, []).append(
                    measure(server.url, prefix, mode, latency_tasks, throughput_tasks))
    base: dict[str, Any] = {k: statistics.median(r[k] for r in results["threads"])
                            for k in ("latency_ms", "tasks_per_s")}
    print(f"{'executor':10} {'create->running':>16} {'ratio':>7} {'tasks/s':>9} {'ratio':>7}")
    for mode, rows in results.items():
        latency = statistics.median(r["latency_ms"] for r in rows)
        rate = statistics.median(r["tasks_per_s"] for r in rows)
        print(f"{mode:10} {latency:13.1f} ms {latency / base['latency_ms']:6.2f}x "
              f"{rate:9.1f} {rate / base['tasks_per_s']:6.2f}x")


if __name__ == "__main__":
    main()
