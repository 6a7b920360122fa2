"""Soak: minutes of mixed load on one server process, then idle; its resources must come back.

    python benchmarks/soak.py --minutes 10                 # both eras, stdio and HTTP
    python benchmarks/soak.py --minutes 2 --transport http --server gunicorn
    python benchmarks/soak.py --minutes 1 --era modern --transport stdio

Each target (one server process per transport, and for stdio one per era, since a stdio
server has exactly one client) runs ``servers/soak_server.py``. Several client threads
drive it until the time is up: calls, progress and logs, questions (a server request in
the handshake era, a multi round-trip retry in 2026-07-28), calls cancelled by a short
``timeout=``, listens opened and closed (``subscriptions/listen``; ``resources/subscribe``
in the handshake era), and over HTTP also calls whose socket is closed mid-call and
handshake sessions created and DELETEd or abandoned. Every loop is bounded by the
deadline; everything runs on loopback.

Printed: RSS, threads and open fds of the server process (from ``/proc``) and the server's
own tables (its ``soak_stats`` tool: sessions, listens, in-flight and pending requests,
event-store size) before any load ("cold"), after a short warm-up ("start"), every
``--sample`` seconds, when the load stops, after ``--idle`` seconds of quiet, and once
more after one new handshake client came and went ("after poke": expired sessions are
swept when the session registry is next used). Exit status 1 when the last sample is not
back: the tables exactly to "cold"; RSS within ``--rss-tolerance`` and threads and fds
within ``--slack`` of "start".
"""

from __future__ import annotations

import argparse
import faulthandler
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SERVERS = os.path.join(HERE, "servers")
SERVER = os.path.join(SERVERS, "soak_server.py")
sys.path.insert(0, REPO)

from mcpsync import (  # noqa: E402
    Client,
    ClientLimits,
    HostHandlers,
    MCPError,
    RequestTimeoutError,
)

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
TABLES = ("server_sessions", "http_sessions", "listeners", "inflight", "pending",
          "event_streams", "events", "event_bytes")
#: Every wait of a load action is bounded by this (seconds).
WAIT = 15.0


def elicit_answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "soak"}}


# -- targets ------------------------------------------------------------------------------


@dataclass
class Target:
    """One server process under load."""

    label: str
    transport: str
    eras: list[str]
    pid: int
    stats: Callable[[], dict[str, Any]]
    stop: Callable[[], None]
    url: str | None = None
    stdio_clients: dict[str, Client] = field(default_factory=dict)


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=REPO + os.pathsep + SERVERS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            threading.Event().wait(0.1)
    raise SystemExit(f"nothing listened on port {port}")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _stats_of(client: Client) -> dict[str, Any]:
    result = client.call_tool("soak_stats", timeout=WAIT)
    if isinstance(result.structured_content, dict):
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def start_http(server: str, eras: list[str]) -> Target:
    port = _free_port()
    if server == "gunicorn":
        argv = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "64", "-w", "1",
                "--timeout", "120", "--graceful-timeout", "5", "-b", f"127.0.0.1:{port}",
                "--chdir", SERVERS, "soak_server:app"]
    else:
        argv = [sys.executable, SERVER, "http", str(port)]
    proc = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _wait_port(port, proc)
    pid = proc.pid
    if server == "gunicorn":
        deadline = time.monotonic() + 30
        while not _children(proc.pid) and time.monotonic() < deadline:
            threading.Event().wait(0.1)
        pid = _children(proc.pid)[0]
    url = f"http://127.0.0.1:{port}/mcp"
    stats_client = Client.http(url, protocol_version=MODERN, timeout=WAIT, cache=False)

    def stop() -> None:
        stats_client.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)

    return Target(f"http-{server}", "http", eras, pid, lambda: _stats_of(stats_client), stop,
                  url=url)


def start_stdio(era: str) -> Target:
    client = Client.stdio([sys.executable, SERVER, "stdio"], env={"PYTHONPATH": REPO},
                          protocol_version=era, timeout=WAIT, cache=False,
                          host=HostHandlers(elicitation=elicit_answer),
                          limits=ClientLimits(max_handlers=32))
    pid = client._connection.transport.pid  # type: ignore[attr-defined]
    name = "modern" if era == MODERN else "handshake"
    return Target(f"stdio-{name}", "stdio", [era], pid, lambda: _stats_of(client),
                  client.close, stdio_clients={era: client})


# -- /proc ----------------------------------------------------------------------------------


def proc_sample(pid: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss_mb"] = round(int(value.split()[0]) / 1024, 1)
            elif key == "Threads":
                out["threads"] = int(value)
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


# -- load ---------------------------------------------------------------------------------


class Load:
    """The client threads of one target, and what they did."""

    def __init__(self, target: Target, threads: int, stop: threading.Event) -> None:
        self.target = target
        self.stop = stop
        self.counts: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        #: The slowest run of each action (seconds).
        self.slowest: dict[str, float] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True,
                                          name=f"soak-{target.label}-{i}")
                         for i in range(threads)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(WAIT * 2)
            if thread.is_alive():
                print(f"warning: {thread.name} did not stop", file=sys.stderr)

    def _count(self, name: str, seconds: float, error: BaseException | None = None) -> None:
        with self._lock:
            self.slowest[name] = max(self.slowest.get(name, 0.0), seconds)
            if error is None:
                self.counts[name] = self.counts.get(name, 0) + 1
            else:
                key = f"{name}: {type(error).__name__}"
                self.errors[key] = self.errors.get(key, 0) + 1

    def _client(self, era: str) -> Client:
        if self.target.transport == "stdio":
            return self.target.stdio_clients[era]
        assert self.target.url is not None
        return Client.http(self.target.url, protocol_version=era, timeout=WAIT, cache=False,
                           host=HostHandlers(elicitation=elicit_answer))

    def _run(self, index: int) -> None:
        rng = random.Random(index)
        era = self.target.eras[index % len(self.target.eras)]
        http = self.target.transport == "http"
        client = self._client(era)
        actions: list[Callable[[Client, str], None]] = [
            self._echo, self._echo, self._work, self._ask, self._cancel, self._listen]
        if http:
            actions += [self._disconnect, self._churn]
        try:
            while not self.stop.is_set():
                action = rng.choice(actions)
                name = action.__name__.strip("_")
                began = time.monotonic()
                try:
                    action(client, era)
                    self._count(name, time.monotonic() - began)
                except Exception as exc:
                    self._count(name, time.monotonic() - began, exc)
        finally:
            if http:
                client.close()

    def _echo(self, client: Client, era: str) -> None:
        result = client.call_tool("echo", {"text": "x" * 64})
        assert not result.is_error

    def _work(self, client: Client, era: str) -> None:
        client.call_tool("work", {"steps": 3}, on_progress=lambda p: None)

    def _ask(self, client: Client, era: str) -> None:
        result = client.call_tool("ask")
        assert not result.is_error, result

    def _cancel(self, client: Client, era: str) -> None:
        try:
            client.call_tool("slow", {"seconds": 5}, timeout=0.2)
        except RequestTimeoutError:
            return
        raise AssertionError("a slow call was not cancelled")

    def _listen(self, client: Client, era: str) -> None:
        with client.listen(tools=False, prompts=False, resources=False,
                           resource_uris=["soak://feed"], timeout=WAIT) as subscription:
            client.call_tool("bump")
            if subscription.get(WAIT) is None:
                raise TimeoutError(f"no resources/updated within {WAIT}s of a bump")

    def _disconnect(self, client: Client, era: str) -> None:
        """POST a slow call on a raw socket and hang up once the server has it."""
        assert self.target.url is not None
        port = int(self.target.url.split(":")[2].split("/")[0])
        request_id = f"raw-{next(self._ids)}"
        params: dict[str, Any] = {"name": "slow", "arguments": {"seconds": 5}}
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if era == MODERN:
            params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": {}}
            headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                            "Mcp-Name": "slow"})
        else:
            session_id = getattr(client._connection.transport, "session_id", None)
            if not session_id:
                return
            headers.update({"Mcp-Session-Id": session_id, "MCP-Protocol-Version": era})
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                           "params": params}).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        request = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
            sock.sendall(request)
            sock.recv(1)  # the status line starts once the call is streaming (json_window)

    def _churn(self, client: Client, era: str) -> None:
        """A handshake session created and closed (DELETE), or abandoned."""
        assert self.target.url is not None
        if self.target.eras == [MODERN]:
            return
        if next(self._ids) % 2:
            with Client.http(self.target.url, protocol_version=HANDSHAKE, timeout=WAIT,
                             cache=False) as fresh:
                fresh.call_tool("echo", {"text": "churn"})
            return
        body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": HANDSHAKE, "capabilities": {},
            "clientInfo": {"name": "abandoned", "version": "0"}}}).encode()
        port = int(self.target.url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
            sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                          "Content-Type: application/json\r\nAccept: application/json, "
                          f"text/event-stream\r\nConnection: close\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            while sock.recv(65536):
                pass


# -- the run ------------------------------------------------------------------------------


def sample(targets: list[Target], phase: str, rows: list[dict[str, Any]]) -> None:
    for target in targets:
        row: dict[str, Any] = {"phase": phase, "target": target.label}
        row.update(proc_sample(target.pid))
        try:
            row.update(target.stats())
        except (MCPError, RequestTimeoutError, OSError) as exc:
            row["error"] = repr(exc)
        rows.append(row)
        print(format_row(row), flush=True)


COLUMNS = ("phase", "target", "rss_mb", "threads", "fds", *TABLES)


def format_header() -> str:
    return ("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))


def format_row(row: dict[str, Any]) -> str:
    return "| " + " | ".join(str(row.get(c, "")) for c in COLUMNS) + " |"


def verdict(rows: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """What did not come back: the server's tables to what they held before any load
    ("cold"), RSS, threads and fds to the sample after the warm-up ("start": imports and
    first-use caches are done by then)."""
    failures = []
    by_target: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_target.setdefault(row["target"], {})[row["phase"]] = row
    for label, phases in by_target.items():
        cold, start, end = phases["cold"], phases["start"], phases["after poke"]
        if "error" in end:
            failures.append(f"{label}: no stats after idle ({end['error']})")
            continue
        if end["rss_mb"] > start["rss_mb"] * (1 + args.rss_tolerance):
            failures.append(f"{label}: RSS {start['rss_mb']} -> {end['rss_mb']} MB "
                            f"(more than +{args.rss_tolerance:.0%})")
        for key in ("threads", "fds"):
            if end[key] > start[key] + args.slack:
                failures.append(f"{label}: {key} {start[key]} -> {end[key]}")
        for key in TABLES:
            if key in cold and key in end and end[key] > cold[key]:
                failures.append(f"{label}: {key} {cold[key]} -> {end[key]}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--era", choices=["both", "modern", "handshake"], default="both")
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    parser.add_argument("--server", choices=["werkzeug", "gunicorn"], default="werkzeug")
    parser.add_argument("--threads", type=int, default=6, help="client threads per target")
    parser.add_argument("--sample", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--idle", type=float, default=45.0,
                        help="quiet seconds before the last sample (handler threads retire "
                             "after 30 s idle, handshake sessions expire after 15 s)")
    parser.add_argument("--rss-tolerance", type=float, default=0.25)
    parser.add_argument("--slack", type=int, default=2, help="extra threads/fds allowed")
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.minutes * 60 + args.idle + args.warmup + 300,
                                      exit=True)
    eras = {"both": [MODERN, HANDSHAKE], "modern": [MODERN], "handshake": [HANDSHAKE]}[args.era]
    targets: list[Target] = []
    try:
        if args.transport in ("http", "both"):
            targets.append(start_http(args.server, eras))
        if args.transport in ("stdio", "both"):
            targets.extend(start_stdio(era) for era in eras)
        rows: list[dict[str, Any]] = []
        loads: list[Load] = []

        def run_load(seconds: float) -> None:
            stop = threading.Event()
            batch = [Load(t, args.threads, stop) for t in targets]
            for load in batch:
                load.start()
            stop.wait(seconds)
            stop.set()
            for load in batch:
                load.join()
            loads.extend(batch)

        print(f"soak: {args.minutes} min, eras {eras}, targets "
              f"{[t.label for t in targets]}, {args.threads} client threads each\n")
        print(format_header())
        sample(targets, "cold", rows)
        run_load(args.warmup)
        sample(targets, "start", rows)
        stop = threading.Event()
        current = [Load(t, args.threads, stop) for t in targets]
        for load in current:
            load.start()
        began = time.monotonic()
        end = began + args.minutes * 60
        minute = 0
        while (now := time.monotonic()) < end:
            stop.wait(min(args.sample, end - now))
            if time.monotonic() < end - 1:
                minute += 1
                sample(targets, f"{minute * args.sample / 60:g} min", rows)
        stop.set()
        for load in current:
            load.join()
        loads.extend(current)
        sample(targets, "load end", rows)
        threading.Event().wait(args.idle)
        sample(targets, f"idle {args.idle:g}s", rows)
        for target in targets:
            if target.transport == "http" and HANDSHAKE in target.eras:
                # The next handshake client: session expiry runs when the registry is used.
                with Client.http(target.url or "", protocol_version=HANDSHAKE, timeout=WAIT,
                                 cache=False) as poke:
                    poke.call_tool("echo", {"text": "poke"})
        sample(targets, "after poke", rows)
    finally:
        for target in targets:
            target.stop()
    print("\nactions: how many succeeded (slowest, seconds), and failures:")
    totals: dict[str, dict[str, int]] = {}
    slowest: dict[str, dict[str, float]] = {}
    for load in loads:
        entry = totals.setdefault(load.target.label, {})
        worst = slowest.setdefault(load.target.label, {})
        for name, n in load.counts.items():
            entry[name] = entry.get(name, 0) + n
        for name, n in load.errors.items():
            entry["FAILED " + name] = entry.get("FAILED " + name, 0) + n
        for name, seconds in load.slowest.items():
            worst[name] = max(worst.get(name, 0.0), seconds)
    for label, entry in totals.items():
        print(f"  {label}: " + ", ".join(
            f"{k} {v}" + (f" ({slowest[label][k]:.2f})" if k in slowest[label] else "")
            for k, v in sorted(entry.items())))
    failures = verdict(rows, args)
    if failures:
        print("\nNOT BACK TO BASELINE:\n  " + "\n  ".join(failures))
        return 1
    print("\nall back to baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
