"""What one POST costs the client at each layer of Python's HTTP stack, against the floor.

    python benchmarks/http_floors.py [--calls 3000] [--rounds 3]

The same 2026-07-28 ``tools/call`` POST (body and headers as mcpsync's client sends them) to
``servers/floor.py`` under gunicorn (``client.floor_http``), made on one kept-alive
connection by:

* ``raw socket``: the request bytes written at once, the answer read to its Content-Length
  (no HTTP library: what the bytes cost);
* ``http.client``: ``HTTPConnection.request`` / ``getresponse().read()`` (the standard
  library, which urllib3 builds on);
* ``urllib3``: ``HTTPConnectionPool.urlopen`` as ``requests`` calls it (what mcpsync's
  client uses for a POST on its own session, see ``transports/http_post.py``);
* ``requests``: ``Session.post``.

Prints this process's CPU time per POST (the server is another process) and wall time,
medians over interleaved rounds. It shows what the HTTP library alone costs a client built
on ``requests``, next to ``client.py``'s whole-call numbers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import sys
import time
from collections.abc import Callable

import requests
import urllib3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import CLIENT_CPU, floor_http

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "echo", "arguments": {"text": "x"},
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
           "Mcp-Name": "echo"}


def _raw(host: str, port: int, path: str) -> Callable[[], None]:
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
    request = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{head}"
               f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY

    def post() -> None:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += _recv(sock)
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head_bytes.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            rest += _recv(sock)

    return post


def _recv(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise RuntimeError("the server closed the connection")
    return chunk


def _http_client(host: str, port: int, path: str) -> Callable[[], None]:
    conn = http.client.HTTPConnection(host, port)

    def post() -> None:
        conn.request("POST", path, BODY, HEADERS)
        conn.getresponse().read()

    return post


def _urllib3(host: str, port: int, path: str) -> Callable[[], None]:
    pool = urllib3.HTTPConnectionPool(host, port, maxsize=4)

    def post() -> None:
        response = pool.urlopen("POST", path, body=BODY, headers=HEADERS, redirect=False,
                                preload_content=False, decode_content=False, retries=False,
                                timeout=urllib3.Timeout(connect=10.0, read=70.0))
        response.read()
        response.release_conn()

    return post


def _requests(url: str) -> Callable[[], None]:
    session = requests.Session()

    def post() -> None:
        session.post(url, data=BODY, headers=HEADERS, timeout=(10.0, 70.0)).close()

    return post


def _measure(post: Callable[[], None], calls: int) -> tuple[float, float]:
    for _ in range(200):
        post()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        post()
    return ((time.process_time() - cpu) / calls * 1e6,
            (time.perf_counter() - wall) / calls * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {CLIENT_CPU})  # the server is pinned to the other core
    results: dict[str, list[tuple[float, float]]] = {}
    with floor_http() as url:
        parsed = urllib3.util.parse_url(url)
        host, port, path = parsed.host or "127.0.0.1", parsed.port or 80, parsed.path or "/"
        for _ in range(args.rounds):
            # Each made just before it runs: gunicorn closes a connection idle for 2 s.
            layers: dict[str, Callable[[], Callable[[], None]]] = {
                "raw socket": lambda: _raw(host, port, path),
                "http.client": lambda: _http_client(host, port, path),
                "urllib3": lambda: _urllib3(host, port, path),
                "requests": lambda: _requests(url)}
            for name, make in layers.items():
                results.setdefault(name, []).append(_measure(make(), args.calls))
    print(f"One POST to the floor, {args.rounds} round(s) x {args.calls}, medians:")
    print("| layer | client CPU per POST | wall per POST |")
    print("|---|---:|---:|")
    for name, rows in results.items():
        cpu = statistics.median(row[0] for row in rows)
        wall = statistics.median(row[1] for row in rows)
        print(f"| {name} | {cpu:,.0f} µs | {wall:,.0f} µs |")


if __name__ == "__main__":
    main()
