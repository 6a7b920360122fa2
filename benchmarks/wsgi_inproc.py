"""mcpsync's own CPU per HTTP request, in process: no WSGI server, no sockets.

Builds ``server.wsgi_app(path="/mcp")`` for ``benchmarks/servers/bench_mcpsync.py`` and
calls it directly with prepared environs, so the numbers are mcpsync's alone (what the HTTP
layer adds on top of dispatch), in both eras:

* ``modern``: a 2026-07-28 ``tools/call`` of ``echo`` with its ``_meta`` envelope and the
  MCP-Protocol-Version / Mcp-Method / Mcp-Name headers;
* ``session``: a 2025-11-25 session (``initialize``, ``notifications/initialized``), then
  ``tools/call`` of ``echo`` with its ``Mcp-Session-Id``.

``python benchmarks/wsgi_inproc.py [-n 20000] [--rounds 5] [--compare DIR] [--profile ERA]``
prints the median and minimum µs of process CPU (``time.process_time``) per call of each era;
``--compare DIR`` runs another checkout of mcpsync (e.g. a ``git worktree`` of the code
before a change) in a subprocess, interleaved round by round with this one.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ERAS = ("modern", "session")


def _environ(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8000", "HTTP_ACCEPT": "application/json, text/event-stream",
        "wsgi.input": io.BytesIO(body), "wsgi.multithread": True, "wsgi.url_scheme": "http",
    }
    for name, value in headers.items():
        env["HTTP_" + name.upper().replace("-", "_")] = value
    return env


def _call(app: Any, body: bytes, headers: dict[str, str]) -> tuple[str, dict[str, str], bytes]:
    got: dict[str, Any] = {}

    def start_response(status: str, hdrs: list[tuple[str, str]], exc_info: Any = None) -> None:
        got["status"], got["headers"] = status, dict(hdrs)

    result = app(_environ(body, headers), start_response)
    try:
        out = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return got["status"], got["headers"], out


def _modern(app: Any) -> Any:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hello"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "echo"}
    status, _, out = _call(app, body, headers)
    assert status.startswith("200") and b"hello" in out, (status, out)
    return lambda: _call(app, body, headers)


def _session(app: Any) -> Any:
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "inproc", "version": "1"}}}).encode()
    status, hdrs, out = _call(app, init, {})
    assert status.startswith("200"), (status, out)
    sid = {k.lower(): v for k, v in hdrs.items()}["mcp-session-id"]
    headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _, out = _call(app, note, headers)
    assert status.startswith("202"), (status, out)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hello"}}}).encode()
    status, _, out = _call(app, body, headers)
    assert status.startswith("200") and b"hello" in out, (status, out)
    return lambda: _call(app, body, headers)


def _app() -> Any:
    sys.path.insert(0, os.path.join(HERE, "servers"))
    import bench_mcpsync

    return bench_mcpsync.server.wsgi_app(path="/mcp")


def worker(n: int) -> None:
    """Subprocess mode: one line of JSON per round asked on stdin (era name)."""
    app = _app()
    calls = {"modern": _modern(app), "session": _session(app)}
    for line in sys.stdin:
        era = line.strip()
        call = calls[era]
        for _ in range(min(n // 10, 500)):  # warm
            call()
        start = time.process_time()
        for _ in range(n):
            call()
        cpu = time.process_time() - start
        print(json.dumps({"era": era, "us": cpu / n * 1e6}), flush=True)


def _spawn(tree: str, n: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=tree)
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(n)],
                            cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=20000, help="calls per round and era")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", metavar="DIR", help="another mcpsync checkout")
    parser.add_argument("--profile", choices=ERAS, help="cProfile one era instead")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker)
        return
    if args.profile:
        # This directory's profile.py would shadow the standard library's.
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
        import cProfile
        import pstats

        app = _app()
        call = _modern(app) if args.profile == "modern" else _session(app)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.n):
            call()
        prof.disable()
        pstats.Stats(prof).sort_stats(os.environ.get("SORT", "tottime")).print_stats(35)
        return
    here = os.path.dirname(HERE)
    trees = {"this": here} | ({"compare": os.path.abspath(args.compare)} if args.compare else {})
    procs = {name: _spawn(tree, args.n) for name, tree in trees.items()}
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for r in range(args.rounds):
            for era in ERAS:
                for name, proc in procs.items():
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write(era + "\n")
                    proc.stdin.flush()
                    us = json.loads(proc.stdout.readline())["us"]
                    results.setdefault((name, era), []).append(us)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)
    # The minimum beside the median: on a shared host the least disturbed round is the
    # closer estimate of the code's own cost, and the two trees are judged on both.
    print(f"µs of CPU per call (median / minimum of {args.rounds} rounds of {args.n}):")
    for era in ERAS:
        row = "  ".join(f"{name} {statistics.median(results[(name, era)]):7.1f} / "
                        f"{min(results[(name, era)]):5.1f}" for name in trees)
        print(f"  {era:8} {row}")


if __name__ == "__main__":
    main()
