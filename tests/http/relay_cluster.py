"""Several workers of one deployment in one test process, for the relay tests.

Each worker is a ``wsgi_app`` of its own :class:`Server` (made by one factory, as every
gunicorn worker imports the same module) on its own real socket; they share one
MemorySessionStore, one InMemoryEventStore and one InProcessBus. A client reaches them
through :class:`Balancer`, a real ``requests`` adapter that sends each request to the
worker a routing rule picks (round-robin, or a rule that makes a test's point: "the
answer lands on the other worker"). ``relay=False`` builds the same deployment without
the bus (``MCPSYNC_TEST_NO_RELAY=1`` does it for every test): each relay test must then
fail, which is how they were checked.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from mcpsync import HandlerContext, Server, ServerLimits
from mcpsync.http import InMemoryEventStore
from mcpsync.http.bus import InProcessBus
from mcpsync.http.session_store import MemorySessionStore
from tests.serving import RunningServer

from .raw import WAIT

FRONT = "http://balancer.test"
RELAY_ON = os.environ.get("MCPSYNC_TEST_NO_RELAY") is None


class Controls:
    """What the test and the tools of every worker share (the tools run in this process)."""

    def __init__(self) -> None:
        self.ticks = threading.Semaphore(0)
        self.cancelled = threading.Event()
        self.started = threading.Event()
        self.ran_on: list[str] = []


def worker_server(name: str, controls: Controls) -> Server:
    server = Server(f"relay-{name}", limits=ServerLimits(request_timeout=WAIT))

    @server.tool()
    def ask(ctx: HandlerContext) -> str:
        """Elicit a name, answer with it and the worker that asked."""
        controls.ran_on.append(name)
        answer = ctx.elicit("Name?", {"type": "object",
                                      "properties": {"name": {"type": "string"}}})
        return f"{answer.action}:{(answer.content or {}).get('name')}@{name}"

    @server.tool()
    def ask_model(ctx: HandlerContext) -> str:
        """Ask the client's model (sampling: every handshake version has it)."""
        reply = ctx.sample("Say hi", max_tokens=10)
        return f"{reply.model}:{getattr(reply.content, 'text', reply.content)}@{name}"

    @server.tool()
    def wait_cancel(ctx: HandlerContext) -> str:
        """Run until cancelled (bounded)."""
        controls.ran_on.append(name)
        controls.started.set()
        if ctx.cancelled.wait(WAIT):
            controls.cancelled.set()
            return "cancelled"
        return "not cancelled"

    @server.tool()
    def ticker(ctx: HandlerContext, count: int) -> str:
        """Log 0..count-1 on the session's GET stream (a detached context), one tick per
        release of ``controls.ticks``."""
        detached = ctx.detach()

        def run() -> None:
            for i in range(count):
                if not controls.ticks.acquire(timeout=WAIT):
                    return
                detached.log("info", i)

        threading.Thread(target=run, name=f"test-ticker-{name}", daemon=True).start()
        return f"started@{name}"

    @server.tool()
    def count(ctx: HandlerContext, n: int) -> str:
        """Log 0..n-1 on this request's stream, one per tick, then answer."""
        for i in range(n):
            if not controls.ticks.acquire(timeout=WAIT):
                raise TimeoutError("the test stopped releasing ticks")
            ctx.log("info", i)
        return f"done@{name}"

    @server.tool()
    def logs(ctx: HandlerContext) -> str:
        """Log at info and at error; the session's level decides what goes out."""
        ctx.log("info", "an info line")
        ctx.log("error", "an error line")
        return name

    @server.tool()
    def touch(uri: str) -> str:
        """Say that ``uri`` changed (on this worker)."""
        server.notify_resource_updated(uri)
        return name

    @server.resource("relay://item")
    def item() -> str:
        return "item"

    return server


class Cluster:
    """``n`` workers sharing stores and (with ``relay``) a bus. ``urls[i]`` is worker i's
    MCP endpoint; ``apps[i]`` its app."""

    def __init__(self, n: int = 2, *, relay: bool = RELAY_ON, bus: Any = None,
                 session_store: Any = None, **options: Any) -> None:
        self.controls = Controls()
        self.bus = (bus if bus is not None else InProcessBus()) if relay else None
        self.session_store = session_store if session_store is not None else (
            MemorySessionStore())
        self.event_store = InMemoryEventStore()
        self.workers: list[RunningServer] = []
        options.setdefault("retry_ms", 50)
        try:
            for i in range(n):
                app = worker_server(str(i), self.controls).wsgi_app(
                    path="/mcp", session_store=self.session_store,
                    event_store=self.event_store, bus=self.bus, **options)
                self.workers.append(RunningServer(app, on_stop=app.close))
        except BaseException:
            self.close()
            raise
        self.urls = [w.base + "/mcp" for w in self.workers]
        self.apps = [w.app for w in self.workers]

    def held_by(self, session_id: str) -> list[int]:
        """The workers that hold the session now."""
        return [i for i, app in enumerate(self.apps) if app.sessions.held(session_id)]

    def close(self) -> None:
        for worker in reversed(self.workers):
            worker.stop()
        if self.bus is not None:
            self.bus.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def jsonrpc_kind(request: requests.PreparedRequest) -> str:
    """What a request carries: ``"GET"``, ``"DELETE"``, or for a POST ``"request"``,
    ``"answer"`` (a response to a server request), ``"notification"`` or ``"batch"``."""
    if request.method != "POST":
        return str(request.method)
    body = request.body
    try:
        message = json.loads(body if isinstance(body, (bytes, str)) else b"")
    except ValueError:
        return "request"
    if isinstance(message, list):
        return "batch"
    if "method" not in message:
        return "answer"
    return "request" if "id" in message else "notification"


class Balancer(HTTPAdapter):
    """A real adapter that sends each request to the worker ``route(request)`` names."""

    def __init__(self, urls: list[str], route: Callable[[requests.PreparedRequest], int]) -> None:
        super().__init__()
        self.urls = urls
        self.route = route
        self.sent: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        index = self.route(request)
        with self._lock:
            self.sent.append((jsonrpc_kind(request), index))
        assert request.url is not None
        request.url = self.urls[index] + request.url[len(FRONT + "/mcp"):]
        return super().send(request, **kwargs)


def round_robin(n: int = 2) -> Callable[[requests.PreparedRequest], int]:
    counter = itertools.count()
    lock = threading.Lock()

    def route(request: requests.PreparedRequest) -> int:
        with lock:
            return next(counter) % n

    return route


def by_kind(**workers: int) -> Callable[[requests.PreparedRequest], int]:
    """Route by :func:`jsonrpc_kind` (``GET=1, answer=1``...); 0 for the rest."""
    return lambda request: workers.get(jsonrpc_kind(request), 0)


def balanced_session(cluster: Cluster,
                     route: Callable[[requests.PreparedRequest], int]) -> tuple[
                         requests.Session, Balancer]:
    http = requests.Session()
    balancer = Balancer(cluster.urls, route)
    http.mount(FRONT + "/", balancer)
    return http, balancer


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
               "proxy-authenticate", "proxy-authorization", "content-length"}


class Front:
    """A plain load balancer in front of the workers, as a WSGI app on its own socket (for
    clients in another process, such as the official SDK's): each request goes to the
    worker ``route(method, body)`` names, streamed both ways, with no stickiness."""

    def __init__(self, urls: list[str], route: Callable[[str, bytes], int]) -> None:
        self.urls = urls
        self.route = route
        self.sent: list[tuple[str, int]] = []
        self._lock = threading.Lock()
        self.server = RunningServer(self)
        self.url = self.server.base + "/mcp"

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        method = environ["REQUEST_METHOD"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        index = self.route(method, body)
        with self._lock:
            self.sent.append((kind_of(method, body), index))
        headers = {key[5:].replace("_", "-").title(): value for key, value in environ.items()
                   if key.startswith("HTTP_") and key not in ("HTTP_HOST", "HTTP_CONNECTION")}
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        upstream = requests.request(method, self.urls[index], data=body or None,
                                    headers=headers, stream=True, timeout=(WAIT, 60))
        start_response(f"{upstream.status_code} {upstream.reason}", [
            (k, v) for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP])

        def chunks() -> Any:
            try:
                yield from upstream.raw.stream(1024, decode_content=False)
            except requests.exceptions.RequestException:
                return
            except Exception:  # the worker went away mid-stream: end ours too
                return
            finally:
                upstream.close()

        return chunks()

    def close(self) -> None:
        self.server.stop()


def kind_of(method: str, body: bytes) -> str:
    """:func:`jsonrpc_kind` of a raw request."""
    request = requests.Request(method, FRONT, data=body).prepare()
    return jsonrpc_kind(request)


def front_by_kind(**workers: int) -> Callable[[str, bytes], int]:
    return lambda method, body: workers.get(kind_of(method, body), 0)
