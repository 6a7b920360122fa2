"""A raw HTTP/1.1 server on a loopback port whose answers a test writes byte by byte.

For the servers a real MCP server never is: one that answers with 300 MiB, with JSON nested
100k deep, with a stream that ends at once, or that accepts a request and never answers.
Every connection carries one request (``Connection: close``). A script gets a
:class:`RawRequest` and writes whatever it wants to its socket; returning closes it.
``stop()`` wakes scripts that wait on :attr:`RawHttpServer.stopping`, shuts every open
connection down (a script blocked on its socket fails, which ends it) and joins every
connection thread, all by one deadline.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.serving import shut_down

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
JOIN_TIMEOUT = 10.0
_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "1"}}


class RawRequest:
    """One parsed HTTP request and the socket to answer it on."""

    def __init__(self, server: RawHttpServer, sock: socket.socket, method: str, path: str,
                 headers: dict[str, str], body: bytes) -> None:
        self.server = server
        self.sock = sock
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        try:
            self.json: Any = json.loads(body) if body else None
        except ValueError:
            self.json = None
        self.rpc_method: str | None = (
            self.json.get("method") if isinstance(self.json, dict) else None)
        self.rpc_id: Any = self.json.get("id") if isinstance(self.json, dict) else None

    def send_head(self, status: int = 200, content_type: str = "application/json",
                  length: int | None = None, **headers: str) -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", "Connection: close"]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

    def send_body(self, data: bytes, status: int = 200,
                  content_type: str = "application/json", **headers: str) -> None:
        self.send_head(status, content_type, len(data), **headers)
        self.sock.sendall(data)

    def answer(self, result: dict[str, Any], **headers: str) -> None:
        """A JSON answer to this JSON-RPC request."""
        body = {"jsonrpc": "2.0", "id": self.rpc_id, "result": {"_meta": _INFO, **result}}
        self.send_body(json.dumps(body).encode(), **headers)

    def accepted(self) -> None:
        self.send_body(b"", status=202)

    def wait_for_hangup(self, timeout: float) -> bool:
        """Block until the client closes its end (True) or ``timeout`` passes (False)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except OSError:
            return True
        return True


Script = Callable[[RawRequest], None]


def trickle_body(body: bytes = b"", *, count: int = 200, pause: float = 0.1) -> Script:
    """A 200 answer whose body is ``count`` spaces sent one at a time, ``pause`` seconds
    apart, then ``body`` (valid JSON once it ends): per-read timeouts never fire on it."""

    def script(request: RawRequest) -> None:
        request.send_head(200, length=count + len(body))
        for _ in range(count):
            if request.server.stopping.wait(pause):
                return
            request.sock.sendall(b" ")
        request.sock.sendall(body)

    return script


def trickle_head(status: str = "200 OK", *, count: int = 200, pause: float = 0.1) -> Script:
    """An answer whose head never ends: ``count`` header lines sent ``pause`` seconds apart."""

    def script(request: RawRequest) -> None:
        request.sock.sendall(f"HTTP/1.1 {status}\r\n".encode())
        for _ in range(count):
            if request.server.stopping.wait(pause):
                return
            request.sock.sendall(b"X-Slow: 1\r\n")

    return script


def modern_script(tools: Script) -> Script:
    """A 2026-07-28 server: answers ``server/discover``; ``tools(request)`` the rest."""

    def script(request: RawRequest) -> None:
        if request.rpc_method == "server/discover":
            request.answer({"resultType": "complete", "supportedVersions": [MODERN],
                            "capabilities": {"tools": {}}, "ttlMs": 0})
        elif request.rpc_id is None:
            request.accepted()
        else:
            tools(request)

    return script


class _Handler(socketserver.BaseRequestHandler):
    server: _TcpServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        reader = sock.makefile("rb")
        line = reader.readline(65536)
        if not line:
            return
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (line := reader.readline(65536)) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = reader.read(int(headers.get("content-length") or 0))
        owner = self.server.owner
        request = RawRequest(owner, sock, method, path, headers, body)
        owner._record(request)
        try:
            owner.script(request)
        except OSError:
            pass  # the client hung up: that is its right


class _TcpServer(socketserver.ThreadingTCPServer):
    # The connection threads are joined by stop(), by a deadline: socketserver's own join
    # (block_on_close) has none, and a script blocked on a client that neither reads nor
    # hangs up (sendall into a full socket, recv from a silent one) would hold it forever.
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: RawHttpServer

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self._lock = threading.Lock()
        self._live: dict[threading.Thread, socket.socket] = {}

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        me = threading.current_thread()
        with self._lock:
            self._live[me] = request
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                del self._live[me]

    def live_connections(self) -> int:
        with self._lock:
            return len(self._live)

    def end_connections(self, timeout: float) -> list[threading.Thread]:
        """Shut every open connection's socket down (a script blocked on it fails with
        OSError, which ends it), then join their threads by one deadline: those still
        alive after it."""
        with self._lock:
            live = dict(self._live)
        for sock in live.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed already
        deadline = time.monotonic() + timeout
        for thread in live:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread for thread in live if thread.is_alive()]


class RawHttpServer:
    """Serve ``script`` at ``url`` (``http://127.0.0.1:PORT/mcp``) until :meth:`stop`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.stopping = threading.Event()
        self.requests: list[RawRequest] = []
        self._changed = threading.Condition()
        self._tcp = _TcpServer(("127.0.0.1", 0))
        self._tcp.owner = self
        self.port: int = self._tcp.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._thread = threading.Thread(target=self._tcp.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="mcpsync-test-raw-http", daemon=True)
        self._thread.start()

    def _record(self, request: RawRequest) -> None:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()

    def seen(self, http_method: str, rpc_method: str | None = None) -> list[RawRequest]:
        with self._changed:
            return [r for r in self.requests if r.method == http_method
                    and (rpc_method is None or r.rpc_method == rpc_method)]

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait (bounded) until ``predicate()``; it is checked on every request that
        arrives and every 50 ms, since scripts change state without telling."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.05))
            return True

    def live_connections(self) -> int:
        """How many connections a thread serves now."""
        return self._tcp.live_connections()

    def stop(self) -> None:
        """Stop accepting, end every connection and join its thread: all by one deadline
        (an assertion names what outlived it)."""
        self.stopping.set()
        shut_down(self._tcp, self._thread, JOIN_TIMEOUT)
        stuck = self._tcp.end_connections(JOIN_TIMEOUT)
        self._tcp.server_close()
        assert not stuck, f"{len(stuck)} connection thread(s) did not end"

    def __enter__(self) -> RawHttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
