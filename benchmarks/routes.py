"""A generated tool, three ways to its route: mcpsync calling the WSGI app in process
(``Server.from_wsgi``), mcpsync calling it over HTTP (``Server.from_openapi`` with
``requests`` to the same app under gunicorn), and fastmcp's ``FastMCP.from_openapi`` calling
it over HTTP with its async client. The MCP side is an in-memory client in each case
(mcpsync's ``Client.memory``, fastmcp's ``Client(mcp)``), so what differs is the way from the
tool to the route; also shown: a bare ``requests`` GET to gunicorn (the HTTP floor).

    python benchmarks/routes.py [-n 2000] [--rounds 5] [--workers 2]

Prints the median µs per sequential call and each as a ratio of the in-process call. The
app is ``benchmarks/servers/routes_app.py`` (plain WSGI, one JSON route). fastmcp comes
from the bench-fastmcp venv (``benchmarks/install``); without it, its row is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(HERE, "servers"))

from routes_app import DOCUMENT, app  # noqa: E402

PEERS = os.environ.get("MCPSYNC_PEERS_DIR") or os.path.expanduser("~/.cache/mcpsync-peers")
PY_FASTMCP = os.path.join(PEERS, "bench-fastmcp", "bin", "python")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")


def timed(call: Callable[[int], object], n: int, rounds: int) -> float:
    for i in range(50):
        call(i)
    per_call = []
    for _ in range(rounds):
        began = time.perf_counter()
        for i in range(n):
            call(i)
        per_call.append((time.perf_counter() - began) / n * 1e6)
    return statistics.median(per_call)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()

    import requests

    from mcpsync import Client, Server

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-w", str(options.workers), "-k", "gthread",
         "--threads", "4", "-b", f"127.0.0.1:{port}", "--log-level", "warning",
         "routes_app:app"],
        cwd=os.path.join(HERE, "servers"))
    rows: list[tuple[str, float]] = []
    try:
        wait_for_port(port, time.monotonic() + 30)
        in_process = Server.from_wsgi(app, openapi=DOCUMENT)
        over_http = Server.from_openapi(DOCUMENT, base_url=base)
        with Client.memory(in_process) as client:
            def call_in(i: int) -> object:
                return client.call_tool("get_item", {"item_id": i})

            rows.append(("mcpsync from_wsgi, in process", timed(call_in, options.n,
                                                                 options.rounds)))
        with Client.memory(over_http) as client:
            def call_http(i: int) -> object:
                return client.call_tool("get_item", {"item_id": i})

            rows.append(("mcpsync from_openapi, HTTP to gunicorn",
                         timed(call_http, options.n, options.rounds)))
        with requests.Session() as session:
            def bare(i: int) -> object:
                return session.get(f"{base}/items/{i}").json()

            rows.append(("(bare requests GET to gunicorn, no MCP)",
                         timed(bare, options.n, options.rounds)))
        if os.path.exists(PY_FASTMCP):
            done = subprocess.run(
                [PY_FASTMCP, os.path.join(HERE, "servers", "routes_fastmcp.py"), base,
                 str(options.n), str(options.rounds)],
                capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise SystemExit(f"fastmcp failed:\n{done.stderr[-3000:]}")
            rows.append(("fastmcp from_openapi, HTTP to gunicorn",
                         float(json.loads(done.stdout.strip().splitlines()[-1])["us"])))
    finally:
        gunicorn.terminate()
        gunicorn.wait(30)
    floor = rows[0][1]
    print(f"| way to the route (n={options.n}, median of {options.rounds}) | µs per call "
          "| × in process |")
    print("|---|---:|---:|")
    for name, micros in rows:
        print(f"| {name} | {micros:.0f} | {micros / floor:.2f} |")


if __name__ == "__main__":
    main()
