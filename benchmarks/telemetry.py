"""What telemetry costs: mcpsync echo calls with the OpenTelemetry API absent, installed
but not imported, imported with no SDK configured, and with the SDK recording into an
exporter that drops everything.

    python benchmarks/telemetry.py            # 3 interleaved rounds, stdio and HTTP
    python benchmarks/telemetry.py --quick    # 1 round, fewer calls

Each (mode, transport) runs in a fresh interpreter, client and server alike: "absent"
hides the ``opentelemetry`` package from the import system (as if the extra were not
installed); "installed" leaves it importable but nothing imports it (mcpsync never imports
it first, so it stays unimported); "api" imports the API, as an application that uses
another instrumented library does, and configures no SDK, so mcpsync looks at the global
providers and finds the API's proxies; "sdk" configures the SDK globally, spans through
a SimpleSpanProcessor into a no-op exporter and metrics into an in-memory reader, in both
the client and the server process. stdio: the server is a child process; HTTP: the
server is mcpsync's WSGI app under werkzeug's threaded server in the same process (its
CPU is then counted too). Reported: the median over rounds of the client process's CPU
time per call and of wall time per call, their ratios to "absent", and the spread of the
wall times over the rounds ((max - min) / median), which shows how noisy the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = ("absent", "installed", "api", "sdk")

SETUP = r'''
import os, sys
mode = os.environ["BENCH_OTEL_MODE"]
if mode == "absent":
    class _Hide:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError(name)
            return None
    sys.meta_path.insert(0, _Hide())
elif mode == "api":
    import opentelemetry.metrics, opentelemetry.trace  # imported, no SDK configured
elif mode == "sdk":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
'''

SERVER = SETUP + r'''
from mcpsync import Server
server = Server("bench")

@server.tool()
def echo(text: str) -> str:
    return text

if __name__ == "__main__":
    server.run_stdio()
'''

DRIVER = SETUP + r'''
import json, resource, time
from mcpsync import Client
transport, calls, server_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
if transport == "stdio":
    client = Client.stdio([sys.executable, server_file], env=dict(os.environ))
    running = None
else:
    sys.path.insert(0, os.path.dirname(server_file))
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_server", server_file)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    from tests.serving import RunningServer
    app = module.server.wsgi_app(path="/mcp")
    running = RunningServer(app, on_stop=app.close).__enter__()
    client = Client.http(running.base + "/mcp", protocol_version="2026-07-28")
for _ in range(200):
    client.call_tool("echo", {"text": "hi"})
start, start_cpu = time.perf_counter(), cpu()
for _ in range(calls):
    client.call_tool("echo", {"text": "hi"})
wall, used = time.perf_counter() - start, cpu() - start_cpu
client.close()
if running is not None:
    running.__exit__(None, None, None)
print(json.dumps({"wall_us": wall / calls * 1e6, "cpu_us": used / calls * 1e6}))
'''


def run(mode: str, transport: str, calls: int, server_file: str) -> dict[str, float]:
    env = {**os.environ, "BENCH_OTEL_MODE": mode, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", DRIVER, transport, str(calls), server_file],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode}/{transport} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    calls = {"stdio": 500 if args.quick else 3000, "http": 200 if args.quick else 1000}
    server_file = os.path.join(HERE, "servers", "_telemetry_server.py")
    with open(server_file, "w", encoding="utf-8") as out:
        out.write(SERVER)
    try:
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for n in range(rounds):
            turn = n % len(MODES)
            order = MODES[turn:] + MODES[:turn]  # rotated, so no mode always goes first
            for transport in ("stdio", "http"):
                for mode in order:
                    results.setdefault((mode, transport), []).append(
                        run(mode, transport, calls[transport], server_file))
    finally:
        os.remove(server_file)
    print("| transport | mode | CPU µs/call | × absent | wall µs/call | × absent | spread |")
    print("|---|---|---|---|---|---|---|")
    for transport in ("stdio", "http"):
        base = {key: statistics.median(r[key] for r in results[("absent", transport)])
                for key in ("cpu_us", "wall_us")}
        for mode in MODES:
            cpu = statistics.median(r["cpu_us"] for r in results[(mode, transport)])
            walls = [r["wall_us"] for r in results[(mode, transport)]]
            wall = statistics.median(walls)
            spread = (max(walls) - min(walls)) / wall
            print(f"| {transport} | {mode} | {cpu:.1f} | {cpu / base['cpu_us']:.2f} | "
                  f"{wall:.1f} | {wall / base['wall_us']:.2f} | {spread:.0%} |")


if __name__ == "__main__":
    main()
