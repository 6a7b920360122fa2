"""``server.wsgi_app()``: MCP Streamable HTTP as a plain WSGI application.

One endpoint serves both eras:

* **2026-07-28** — every POST is a complete request with its own ``_meta`` envelope and
  mirrored headers, checked against the body. No session; GET and DELETE answer 405.
* **2025-03-26 … 2025-11-25** — ``initialize`` mints a random ``Mcp-Session-Id``; the
  session then uses POST, GET (a standalone stream) and DELETE, with resumable streams.
* **2024-11-05 HTTP+SSE** — ``GET {sse_path}`` and ``POST {messages_path}``, for old clients.

Each request is answered with JSON when its handler answers within ``json_window``
seconds without sending anything else first; otherwise the response becomes an SSE stream
carrying the request's notifications (and, in the handshake era, the server's requests),
then its response, with keep-alive comments while it waits. A 2026-07-28 client that
closes its connection cancels the request, whether it awaits JSON or a stream, on servers
that let the app see the client leave (werkzeug, gunicorn, waitress with
``channel_request_lookahead``); elsewhere a stream notices at its next keep-alive and a
JSON wait only when the answer is written.

Handler threads come from one pool per app: ``max_concurrent_handlers`` bounds the
requests running at once over all sessions and both eras.

The app is thread-safe and meant for threaded WSGI servers (werkzeug threaded, gunicorn
``gthread``, waitress): SSE responses hold their server thread while they last.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final

from ..dispatch.inbound import InboundExecutor
from ..dispatch.transport import Headers, TransportContext
from ..engine.connection import InboundRequest
from ..engine.pool import PoolFullError, WorkerPool
from ..errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..protocol import envelope, jsonrpc
from ..protocol import sse as sse_codec
from ..protocol.http_headers import header_params, mismatch
from ..protocol.jsonrpc import ErrorResponse, Invalid, Message, Notification, Request, Response
from ..protocol.numerals import parse_decimal
from ..protocol.versions import features
from ..server import stateless
from .events import EventStore, InMemoryEventStore
from .modern import _RequestChannel, _RequestHost
from .security import HostPolicy
from .session_store import SessionStore
from .sessions import HttpSession, SessionRegistry
from .sse_body import _PEER_CHECK, _Body, _has_answer, _peer_probe
from .streams import Item, ResponseStream, _seq

if TYPE_CHECKING:
    from ..server.server import Server

logger = logging.getLogger("mcpsync.http")

StartResponse = Callable[..., Any]
Environ = dict[str, Any]

SESSION_NOT_FOUND: Final = -32001
_MODERN_STATUS: Final = {
    HEADER_MISMATCH: "400 Bad Request", MISSING_CLIENT_CAPABILITY: "400 Bad Request",
    UNSUPPORTED_PROTOCOL_VERSION: "400 Bad Request", INVALID_REQUEST: "400 Bad Request",
    PARSE_ERROR: "400 Bad Request", METHOD_NOT_FOUND: "404 Not Found",
}
_LEGACY_STATUS: Final = {INVALID_REQUEST: "400 Bad Request", PARSE_ERROR: "400 Bad Request"}
#: Methods whose handlers run on a handler thread, so their progress streams live.
_THREADED: Final = frozenset({"tools/call", "prompts/get", "resources/read",
                              "subscriptions/listen", "completion/complete"})
_SSE_HEADERS: Final = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                       ("X-Accel-Buffering", "no")]
_DEFAULT_STORE: Final = object()


def _encode(message: Message) -> bytes:
    # Notifications and requests were checked when they were sent (their sender got the
    # error); an answer that cannot be encoded becomes an encodable error for its id.
    return jsonrpc.encode_answer(message)


def _error_body(code: int, message: str, msg_id: Any = None,
                data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def _accepts(headers: dict[str, str]) -> tuple[bool, bool]:
    """(JSON acceptable, SSE acceptable) from ``Accept``; absent or ``*/*`` means both."""
    accept = headers.get("accept", "").lower()
    if not accept.strip() or "*/*" in accept:
        return True, True
    return ("application/json" in accept or "application/*" in accept,
            "text/event-stream" in accept or "text/*" in accept)


class McpWsgiApp:
    """The WSGI application of one :class:`~mcpsync.Server`. Thread-safe.

    ``path``: the endpoint path (``None`` serves every path this app is mounted at).
    ``allowed_hosts``/``allowed_origins``: see :class:`~mcpsync.http.security.HostPolicy`
    (loopback only by default). ``max_body_bytes``: larger bodies get 413.
    ``json_window``: how long a handler may take to answer with plain JSON.
    ``keepalive_interval``: seconds between SSE comments on a quiet stream.
    ``session_idle_timeout``/``max_sessions``: handshake-era sessions (404 once expired).
    ``session_handshake_timeout``: how soon a session whose client never made a second
    request after ``initialize`` (normally ``notifications/initialized``) is dropped.
    ``event_store``: resumability of handshake-era streams (``None`` disables it; the
    default is an :class:`~mcpsync.http.events.InMemoryEventStore` bounded to 16 MiB).
    ``session_store``: a :class:`~mcpsync.http.session_store.SessionStore` shared by
    several worker processes, so that a handshake-era session initialized by one can be
    served by another (see that module for what still needs sticky routing).
    ``retry_ms``: the ``retry:`` advice sent to reconnecting clients.
    ``legacy_sessions``: serve the handshake era at all (``False``: 2026-07-28 only).
    """

    def __init__(
        self,
        server: Server,
        *,
        path: str | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = 4 * 1024 * 1024,
        json_window: float = 0.5,
        keepalive_interval: float = 15.0,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 1000,
        session_handshake_timeout: float = 10.0,
        event_store: EventStore | object | None = _DEFAULT_STORE,
        session_store: SessionStore | None = None,
        retry_ms: int = 1000,
        legacy_sessions: bool = True,
        sse_path: str | None = "/sse",
        messages_path: str = "/messages",
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.policy = HostPolicy(allowed_hosts, allowed_origins)
        self.max_body_bytes = max_body_bytes
        self.json_window = json_window
        self.keepalive_interval = keepalive_interval
        self.retry_ms = retry_ms
        self.legacy_sessions = legacy_sessions
        self.sse_path = sse_path
        self.messages_path = messages_path
        store: EventStore | None = (InMemoryEventStore() if event_store is _DEFAULT_STORE
                                    else event_store)  # type: ignore[assignment]
        self.store = store
        # One pool for every handler of this app (2026-07-28 requests and every
        # handshake-era session): max_concurrent_handlers bounds the app, not each session.
        self._pool = WorkerPool(server.max_concurrent_handlers, name="mcpsync-http-handler",
                                max_backlog=4 * server.max_concurrent_handlers)
        self.sessions = SessionRegistry(server, store, idle_timeout=session_idle_timeout,
                                        max_sessions=max_sessions, session_store=session_store,
                                        handshake_timeout=session_handshake_timeout,
                                        pool=self._pool)
        self._header_maps: dict[int, dict[str, tuple[str, ...]] | None] = {}
        self._closed = threading.Event()
        self._local = threading.local()

    def close(self, timeout: float = 5.0) -> None:
        """End every session and stop the handler threads (bounded)."""
        self._closed.set()
        self.sessions.close_all()
        self._pool.shutdown(timeout)

    # -- WSGI entry ----------------------------------------------------------------------

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        headers = {key[5:].replace("_", "-").lower(): value
                   for key, value in environ.items() if key.startswith("HTTP_")}
        if "CONTENT_TYPE" in environ:
            headers["content-type"] = environ["CONTENT_TYPE"]
        if "CONTENT_LENGTH" in environ:
            headers["content-length"] = environ["CONTENT_LENGTH"]
        host = headers.get("host") or environ.get("SERVER_NAME")
        if not self.policy.host_allowed(host):
            return self._plain_error(start_response, "403 Forbidden", INVALID_REQUEST,
                                     f"Forbidden: Host {host!r} is not allowed")
        if not self.policy.origin_allowed(headers.get("origin")):
            return self._plain_error(start_response, "403 Forbidden", INVALID_REQUEST,
                                     f"Forbidden: Origin {headers.get('origin')!r} is not allowed")
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO") or "/"
        # Where the WSGI server lets us see it: lets a quiet SSE stream, or a wait for a
        # JSON answer, notice a departed client at once instead of at its next write.
        self._local.peer = _peer_probe(environ)
        try:
            if self.legacy_sessions and self.sse_path is not None:
                if path == self.sse_path:
                    # Reserved for the old transport, whatever ``path`` says: a client that
                    # POSTs here first (as the spec's fallback has it) must be refused so
                    # that it goes on to GET the stream.
                    if method != "GET":
                        return self._plain_error(
                            start_response, "405 Method Not Allowed", INVALID_REQUEST,
                            "Method not allowed: this is the HTTP+SSE stream; GET it",
                            extra=[("Allow", "GET")])
                    return self._old_sse_stream(environ, headers, start_response)
                if path == self.messages_path and method == "POST":
                    return self._old_sse_post(environ, headers, start_response)
            if self.path is not None and (path.rstrip("/") or "/") != self.path:
                return self._plain_error(start_response, "404 Not Found", INVALID_REQUEST,
                                         f"Not found: {path}")
            if method == "POST":
                return self._post(environ, headers, start_response)
            if method == "GET":
                return self._get(headers, start_response)
            if method == "DELETE":
                return self._delete(headers, start_response)
            return self._method_not_allowed(start_response)
        except _HttpError as exc:
            return self._plain_error(start_response, exc.status, exc.code, exc.message,
                                     exc.msg_id, exc.data)

    # -- the inbound path ----------------------------------------------------------------

    def _executor(self) -> InboundExecutor:
        """The server's middleware as it is now (like a session, a request takes a copy)."""
        return InboundExecutor(self.server.recv_middleware, self.server.send_middleware,
                               name="mcpsync-http")

    @staticmethod
    def _transport(environ: Environ, headers: dict[str, str], session_id: str | None,
                   ) -> TransportContext:
        """The TransportContext of the messages of one HTTP request: a handshake-era
        session's (``session_id``) can be sent requests, a 2026-07-28 one's can not."""
        remote = environ.get("REMOTE_ADDR")
        return TransportContext("http", headers=Headers(headers),
                                remote_addr=remote if isinstance(remote, str) else None,
                                session_id=session_id, can_receive_requests=session_id is not None)

    # -- responses -----------------------------------------------------------------------

    def _json(self, start_response: StartResponse, status: str, body: bytes,
              extra: list[tuple[str, str]] | None = None) -> list[bytes]:
        response_headers = [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))]
        if extra:
            response_headers.extend(extra)
        start_response(status, response_headers)
        return [body]

    def _plain_error(self, start_response: StartResponse, status: str, code: int, message: str,
                     msg_id: Any = None, data: Any = None,
                     extra: list[tuple[str, str]] | None = None) -> list[bytes]:
        body = json.dumps(_error_body(code, message, msg_id, data)).encode()
        return self._json(start_response, status, body, extra)

    def _method_not_allowed(self, start_response: StartResponse) -> list[bytes]:
        return self._plain_error(start_response, "405 Method Not Allowed", INVALID_REQUEST,
                                 "Method not allowed", extra=[("Allow", "POST")])

    def _read_body(self, environ: Environ) -> bytes:
        """The request body, never more than ``max_body_bytes`` of it read, whatever the
        framing claims; malformed framing is a 400 with a JSON-RPC body."""
        try:
            return self._read_framed(environ)
        except _HttpError:
            raise
        except Exception as exc:
            # The WSGI server's own framing errors surface here, as whatever it raises: a
            # chunk size that is not hex, a body cut short, a client gone mid-body.
            logger.debug("unreadable request body: %r", exc)
            raise _HttpError("400 Bad Request", INVALID_REQUEST,
                             "Bad request: malformed request body framing") from None

    def _read_framed(self, environ: Environ) -> bytes:
        length_text = str(environ.get("CONTENT_LENGTH") or "").strip()
        stream = environ["wsgi.input"]
        if length_text:
            # Digits only: int() would take "-1" (which some servers then read as "to
            # EOF"), "+5" or "1_0".
            length = parse_decimal(length_text)
            if length is None:
                raise _HttpError("400 Bad Request", INVALID_REQUEST,
                                 "Bad request: invalid Content-Length")
            if length > self.max_body_bytes:
                raise _HttpError("413 Content Too Large", INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes")
            data = bytes(stream.read(length))
            if len(data) != length:
                raise _HttpError("400 Bad Request", INVALID_REQUEST,
                                 "Bad request: the body ended before Content-Length bytes")
            return data
        if environ.get("wsgi.input_terminated") or environ.get("HTTP_TRANSFER_ENCODING"):
            data = bytes(stream.read(self.max_body_bytes + 1))
            if len(data) > self.max_body_bytes:
                raise _HttpError("413 Content Too Large", INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes")
            return data
        return b""

    def _sse(self, start_response: StartResponse, stream: ResponseStream, first: list[Item],
             done: bool, on_close: Callable[[], None], *, prime_id: str | None = None,
             prelude: bytes = b"", extra: list[tuple[str, str]] | None = None,
             event_name: str | None = None,
             on_complete: Callable[[], None] | None = None) -> _Body:
        start_response("200 OK", _SSE_HEADERS + (extra or []))
        keepalive = self.keepalive_interval
        retry_ms = self.retry_ms
        peer: Callable[[], bool] | None = getattr(self._local, "peer", None)
        tick = min(keepalive, _PEER_CHECK) if peer is not None else keepalive

        def chunks() -> Iterator[bytes]:
            head = prelude
            if prime_id is not None:
                head += sse_codec.encode_event(b"", id=prime_id, retry_ms=retry_ms)
            items, over = first, done
            while True:
                chunk = head + b"".join(
                    sse_codec.encode_event(_encode(message), id=event_id, event=event_name)
                    for event_id, message in items if message is not None)
                # The first chunk sends the headers: never hold it back; later, a quiet
                # interval gets a comment, which also finds out whether the client left.
                if over:
                    try:
                        yield chunk or sse_codec.KEEPALIVE
                    finally:
                        # Resumed, or closed, after the last yield: either way the server
                        # took the chunk and wrote it. Everything was taken, so a finished
                        # stream's final message went out (a client that closes as soon as
                        # it has read the answer must not leave the stream's events kept).
                        stream.delivered = stream.finished
                        if on_complete is not None:
                            on_complete()
                    return
                yield chunk or sse_codec.KEEPALIVE
                head = b""
                quiet = 0.0
                while True:
                    items, over = stream.take(tick)
                    if items or over:
                        break
                    quiet += tick
                    if peer is not None and peer():
                        return  # closing the body runs on_close: a cancellation in 2026-07-28
                    if quiet >= keepalive:
                        break  # yield a keep-alive comment

        return _Body(chunks(), on_close)

    def _answer(self, start_response: StartResponse, stream: ResponseStream, headers: dict[
            str, str], on_close: Callable[[], None], *, statuses: dict[int, str],
            prime: Callable[[], str | None] | None = None,
            extra: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
        """JSON if the final response comes first and soon, else an SSE stream."""
        want_json, want_sse = _accepts(headers)
        if not want_sse:
            try:
                final = self._final_only(stream, getattr(self._local, "peer", None))
            except _ClientGone:
                on_close()  # as when a stream's client leaves: a cancellation in 2026-07-28
                raise _HttpError("499 Client Closed Request", INTERNAL_ERROR,
                                 "The client closed the connection before the answer") from None
            stream.delivered = final is not None
            on_close()
            return self._json_response(start_response, final, statuses, extra)
        items, done = stream.take(self.json_window if want_json else 0.0)
        if want_json and done and len(items) == 1 and items[0][1] is not None and isinstance(
                items[0][1], (Response, ErrorResponse)):
            stream.delivered = True
            on_close()
            return self._json_response(start_response, items[0][1], statuses, extra)
        if done and not items and stream.disconnect_requested and prime is not None:
            # Closed before a word was sent: a priming event lets the client resume.
            return self._sse(start_response, stream, [], True, on_close, prime_id=prime(),
                             extra=extra)
        if done and not items:
            on_close()
            raise _HttpError("503 Service Unavailable", INTERNAL_ERROR,
                             "The session ended before the request was answered")
        return self._sse(start_response, stream, items, done, on_close,
                         prime_id=prime() if prime is not None else None, extra=extra)

    def _final_only(self, stream: ResponseStream,
                    peer: Callable[[], bool] | None = None) -> Message | None:
        """Wait for the final answer only. With a check of the client (``peer``), raise
        :class:`_ClientGone` as soon as the client has closed its connection."""
        tick = min(self.keepalive_interval, _PEER_CHECK) if peer is not None else (
            self.keepalive_interval)
        while True:
            items, done = stream.take(tick)
            for _, message in items:
                if isinstance(message, (Response, ErrorResponse)):
                    return message
            if done:
                return None
            if peer is not None and peer():
                raise _ClientGone()

    def _json_response(self, start_response: StartResponse, message: Message | None,
                       statuses: dict[int, str],
                       extra: list[tuple[str, str]] | None) -> list[bytes]:
        if message is None:
            raise _HttpError("503 Service Unavailable", INTERNAL_ERROR,
                             "The request ended without an answer")
        status = "200 OK"
        if isinstance(message, ErrorResponse):
            code = message.error.get("code")
            status = statuses.get(code if isinstance(code, int) else 0, "200 OK")
        return self._json(start_response, status, _encode(message), extra)

    # -- POST ----------------------------------------------------------------------------

    def _post(self, environ: Environ, headers: dict[str, str],
              start_response: StartResponse) -> Iterable[bytes]:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise _HttpError("415 Unsupported Media Type", INVALID_REQUEST,
                             "Unsupported media type: send Content-Type: application/json")
        want_json, want_sse = _accepts(headers)
        if not want_json and not want_sse:
            raise _HttpError("406 Not Acceptable", INVALID_REQUEST,
                             "Not acceptable: accept application/json and text/event-stream")
        body = self._read_body(environ)
        batch = jsonrpc.is_batch(body)
        items = jsonrpc.decode(body)
        if not items:
            raise _HttpError("400 Bad Request", INVALID_REQUEST, "Invalid request: empty body")
        if not batch and isinstance(items[0], Invalid):
            reply = items[0].reply
            error: dict[str, Any] = reply.error if reply is not None else {
                "code": INVALID_REQUEST, "message": items[0].reason}
            raise _HttpError("400 Bad Request", int(error["code"]), str(error["message"]),
                             reply.id if reply is not None else None)
        session_id = headers.get("mcp-session-id")
        first = items[0]
        if not batch and isinstance(first, (Request, Notification)) and self._is_modern(
                first, headers):
            if isinstance(first, Notification):
                # Nothing to route it to without a session, but middleware sees it.
                transport = self._transport(environ, headers, None)
                self._executor().receive(first, transport, lambda _: None, lambda _: None)
                start_response("202 Accepted", [("Content-Length", "0")])
                return [b""]
            return self._modern(first, environ, headers, start_response)
        if not self.legacy_sessions:
            raise _HttpError("400 Bad Request", INVALID_PARAMS,
                             "Invalid params: this server speaks 2026-07-28 only; put "
                             f"{envelope.META_VERSION!r} in the request's _meta",
                             getattr(first, "id", None))
        if session_id:
            session = self.sessions.get(session_id)
            if session is None:
                raise _HttpError("404 Not Found", SESSION_NOT_FOUND, "Session not found",
                                 getattr(first, "id", None))
            return self._legacy_post(session, items, batch, environ, headers, start_response)
        if not batch and isinstance(first, Request) and first.method == "initialize":
            return self._initialize(first, environ, headers, start_response)
        if batch and any(isinstance(i, Request) and i.method == "initialize" for i in items):
            raise _HttpError("400 Bad Request", INVALID_REQUEST,
                             "Invalid request: initialize cannot be batched")
        raise _HttpError("400 Bad Request", INVALID_REQUEST,
                         "Bad request: no Mcp-Session-Id header (send initialize first), and "
                         f"no {envelope.META_VERSION!r} in _meta (2026-07-28)",
                         getattr(first, "id", None))

    def _is_modern(self, message: Request | Notification, headers: dict[str, str]) -> bool:
        if not self.server.modern_versions:
            return False
        if stateless.is_stateless(message.params or {}):
            return True
        version = headers.get("mcp-protocol-version")
        return version is not None and version not in self.server.legacy_versions and (
            not headers.get("mcp-session-id"))

    # -- 2026-07-28 ----------------------------------------------------------------------

    def _modern(self, message: Request, environ: Environ, headers: dict[str, str],
                start_response: StartResponse) -> Iterable[bytes]:
        params = message.params or {}
        meta = params.get("_meta")
        version = meta.get(envelope.META_VERSION) if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not isinstance(version, str):
            raise _HttpError("400 Bad Request", INVALID_PARAMS,
                             f"Invalid params: _meta[{envelope.META_VERSION!r}] is required",
                             message.id)
        if not isinstance(meta.get(envelope.META_CAPABILITIES), dict):
            raise _HttpError("400 Bad Request", INVALID_PARAMS,
                             f"Invalid params: _meta[{envelope.META_CAPABILITIES!r}] is "
                             "required and must be an object", message.id)
        header_version = headers.get("mcp-protocol-version")
        if header_version != version:
            text = ("the MCP-Protocol-Version header is required" if header_version is None
                    else f"MCP-Protocol-Version header value {header_version!r} does not "
                         f"match body value {version!r}")
            raise _HttpError("400 Bad Request", HEADER_MISMATCH, f"Header mismatch: {text}",
                             message.id)
        problem = mismatch(headers, message.to_wire(), self._tool_headers(message))
        if problem is not None:
            raise _HttpError("400 Bad Request", HEADER_MISMATCH, f"Header mismatch: {problem}",
                             message.id)
        stream = ResponseStream(final_id=message.id)
        executor = self._executor()
        transport = self._transport(environ, headers, None)
        channel = _RequestChannel(stream, executor, transport)
        accepted: list[Request] = []
        refused: list[Message] = []

        def route(passed: Message) -> None:
            if isinstance(passed, Request):
                accepted.append(passed)

        def reply(answer: Message) -> None:
            refused.append(answer)
            channel.answer(answer)

        # The same path as every other transport's: receive middleware on this thread
        # (the engine's reader runs it on its own), the handler on the pool.
        executor.receive(message, transport, route, reply)
        if not accepted:
            if not refused:
                raise _HttpError("503 Service Unavailable", INTERNAL_ERROR,
                                 "The server dropped the request without an answer",
                                 message.id)
            return self._answer(start_response, stream, headers, stream.detach,
                                statuses=_MODERN_STATUS)
        request = accepted[0]
        inbound = InboundRequest(channel, request.id, request.method, request.params or {},
                                 transport)
        host = _RequestHost(self.server, channel, stream)

        def run() -> None:
            out = executor.answer(inbound, lambda: stateless.serve(host, inbound))
            inbound.done = True
            try:
                if out is not None:
                    channel.answer(out)
            finally:
                if not stream.finished:  # no answer, or send middleware dropped it
                    stream.end()

        if request.method in _THREADED and not self._inline_tool(request):
            try:
                self._pool.submit(run)
            except (PoolFullError, RuntimeError) as exc:
                raise _HttpError("503 Service Unavailable", INTERNAL_ERROR,
                                 f"Server busy: {exc}", request.id) from None
        else:
            run()

        def on_close() -> None:
            stream.detach()
            if not stream.finished:
                inbound.cancelled.set()  # closing a 2026-07-28 stream cancels the request

        return self._answer(start_response, stream, headers, on_close, statuses=_MODERN_STATUS)

    def _tool_headers(self, message: Request) -> dict[str, tuple[str, ...]] | None:
        if message.method != "tools/call":
            return None
        tool = self.server.tools.get(str((message.params or {}).get("name")))
        if tool is None:
            return None
        key = id(tool.description)
        if key not in self._header_maps:
            schema = tool.description.get("inputSchema")
            self._header_maps[key] = header_params(schema) if isinstance(schema, dict) else None
        return self._header_maps[key]

    def _inline_tool(self, message: Request) -> bool:
        # A tool without a context parameter can neither report progress nor see
        # cancellation: it runs on this thread, saving a hand-off.
        if message.method != "tools/call":
            return False
        tool = self.server.tools.get(str((message.params or {}).get("name")))
        binding = getattr(tool, "binding", None)
        return binding is not None and getattr(binding, "context_param", 1) is None

    # -- handshake era -------------------------------------------------------------------

    def _initialize(self, message: Request, environ: Environ, headers: dict[str, str],
                    start_response: StartResponse) -> Iterable[bytes]:
        session = self.sessions.create()
        if session is None:
            raise _HttpError("503 Service Unavailable", INTERNAL_ERROR,
                             "Too many sessions", message.id)
        stream = session.open_stream(message.id)
        assert stream is not None
        stream.attach()
        session.feed(message, self._transport(environ, headers, session.id))
        final = self._final_only(stream)
        stream.detach()
        stream.delivered = final is not None
        session.release(stream)
        if not isinstance(final, Response):
            self.sessions.remove(session.id)
            return self._json_response(start_response, final, _LEGACY_STATUS, None)
        version = session.protocol_version
        session.priming = (self.store is not None and version is not None
                           and features(version).sse_polling)
        self.sessions.initialized(session)
        return self._json(start_response, "200 OK", _encode(final),
                          [("Mcp-Session-Id", session.id)])

    def _legacy_post(self, session: HttpSession, items: list[Message | Invalid], batch: bool,
                     environ: Environ, headers: dict[str, str],
                     start_response: StartResponse) -> Iterable[bytes]:
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self.server.legacy_versions:
            raise _HttpError("400 Bad Request", INVALID_REQUEST,
                             f"Bad request: unsupported MCP-Protocol-Version {version!r}")
        if batch and not (session.protocol_version
                          and features(session.protocol_version).batching):
            raise _HttpError("400 Bad Request", INVALID_REQUEST,
                             "Invalid request: batches are only allowed in 2025-03-26")
        replies: list[Message] = []
        streams: list[ResponseStream] = []
        transport = self._transport(environ, headers, session.id)
        for item in items:
            if isinstance(item, Invalid):
                if item.reply is not None:  # answered in this POST's body, as sent
                    self._executor().send(item.reply, transport, replies.append)
                continue
            if isinstance(item, Request):
                stream = session.open_stream(item.id)
                if stream is None:
                    replies.append(ErrorResponse(item.id, {
                        "code": INVALID_REQUEST,
                        "message": f"Invalid request: id {item.id!r} is already in flight"}))
                    continue
                stream.attach()
                streams.append(stream)
            session.feed(item, transport)
        if not streams and not replies:
            start_response("202 Accepted", [("Content-Length", "0")])
            return [b""]
        if batch or not streams:
            for stream in streams:
                final = self._final_only(stream)
                stream.detach()
                stream.delivered = final is not None
                session.release(stream)
                if final is not None:
                    replies.append(final)
            body = b"[" + b",".join(_encode(m) for m in replies) + b"]" if batch else _encode(
                replies[0])
            return self._json(start_response, "200 OK", body)
        stream = streams[0]

        def on_close() -> None:
            stream.detach()  # a dropped handshake-era stream is not a cancellation
            session.release(stream)

        return self._answer(start_response, stream, headers, on_close, statuses=_LEGACY_STATUS,
                            prime=(lambda: session.prime(stream)) if session.priming else None)

    def _session_for(self, headers: dict[str, str]) -> HttpSession:
        session_id = headers.get("mcp-session-id")
        if not session_id or not self.legacy_sessions:
            raise _MethodNotAllowed()
        session = self.sessions.get(session_id)
        if session is None:
            raise _HttpError("404 Not Found", SESSION_NOT_FOUND, "Session not found")
        return session

    def _get(self, headers: dict[str, str], start_response: StartResponse) -> Iterable[bytes]:
        try:
            session = self._session_for(headers)
        except _MethodNotAllowed:
            return self._method_not_allowed(start_response)
        if not _accepts(headers)[1]:
            raise _HttpError("406 Not Acceptable", INVALID_REQUEST,
                             "Not acceptable: a GET stream needs Accept: text/event-stream")
        session.touch()
        last = headers.get("last-event-id")
        if last and self.store is not None:
            found = self.store.events_after(last)
            # Only this session's own streams: an id of another session's stream is
            # treated as unknown (a fresh GET stream, nothing replayed).
            if found is not None and session.owns(found[0]):
                return self._resume(session, found, last, start_response)
        stream = session.open_standalone()
        if stream is None:
            raise _HttpError("409 Conflict", INVALID_REQUEST,
                             "Conflict: this session already has a GET stream")
        stream.attach()

        def on_close() -> None:
            stream.detach()
            session.close_standalone(stream)

        items, done = stream.take(0.0)
        return self._sse(start_response, stream, items, done, on_close,
                         prime_id=session.prime(stream) if session.priming else None)

    def _resume(self, session: HttpSession, found: tuple[str, list[tuple[str, bytes]]],
                last: str, start_response: StartResponse) -> Iterable[bytes]:
        key, events = found
        replay = b"".join(sse_codec.encode_event(data, id=event_id)
                          for event_id, data in events if data)
        live = session.stream_by_key(key)
        skip = max([_seq(last)] + [_seq(event_id) for event_id, _ in events])
        on_complete: Callable[[], None] | None = None
        if live is not None and live.final_id is not None and _has_answer(events, live.final_id):
            live = None  # the replay carries the final answer: the stream is over for us
        if live is None:  # that stream is over: replay what was kept, then end
            stream = ResponseStream()
            stream.end()

            def on_complete() -> None:
                # The replay, final answer included, went out whole: no resume needs it.
                session.forget_finished(key)
        else:
            stream = live
            standalone = live.final_id is None
            if standalone and live.attached:
                raise _HttpError("409 Conflict", INVALID_REQUEST,
                                 "Conflict: this session already has a GET stream")
            stream.attach(skip_through=skip)
            if standalone and not session.resume_standalone(live):
                stream.detach()
                raise _HttpError("409 Conflict", INVALID_REQUEST,
                                 "Conflict: this session already has a GET stream")

        def on_close() -> None:
            stream.detach()
            if live is not None:
                session.release(live)
                if live.final_id is None:
                    session.close_standalone(live)

        items, done = stream.take(0.0)
        return self._sse(start_response, stream, items, done, on_close, prelude=replay,
                         on_complete=on_complete)

    def _delete(self, headers: dict[str, str], start_response: StartResponse) -> Iterable[bytes]:
        session_id = headers.get("mcp-session-id")
        if not session_id or not self.legacy_sessions:
            return self._method_not_allowed(start_response)
        if not self.sessions.remove(session_id):
            raise _HttpError("404 Not Found", SESSION_NOT_FOUND, "Session not found")
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    # -- 2024-11-05 HTTP+SSE -------------------------------------------------------------

    def _old_sse_stream(self, environ: Environ, headers: dict[str, str],
                        start_response: StartResponse) -> Iterable[bytes]:
        session = self.sessions.create(legacy_sse=True)
        if session is None:
            raise _HttpError("503 Service Unavailable", INTERNAL_ERROR, "Too many sessions")
        stream = session.open_standalone()
        assert stream is not None
        stream.attach()
        endpoint = (environ.get("SCRIPT_NAME", "") + self.messages_path
                    + "?session_id=" + session.id)

        def on_close() -> None:
            stream.detach()
            self.sessions.remove(session.id)

        items, done = stream.take(0.0)
        return self._sse(start_response, stream, items, done, on_close,
                         prelude=sse_codec.encode_event(endpoint, event="endpoint"),
                         event_name="message")

    def _old_sse_post(self, environ: Environ, headers: dict[str, str],
                      start_response: StartResponse) -> Iterable[bytes]:
        from urllib.parse import parse_qs

        query = parse_qs(environ.get("QUERY_STRING", ""))
        session_id = (query.get("session_id") or query.get("sessionId") or [""])[0]
        session = self.sessions.get(session_id)
        if session is None or not session.legacy_sse:
            raise _HttpError("404 Not Found", SESSION_NOT_FOUND, "Session not found")
        body = self._read_body(environ)
        transport = self._transport(environ, headers, session.id)
        for item in jsonrpc.decode(body):
            # An unreadable message too: the engine sends its error reply, through the
            # send middleware, on the stream (as on every other transport).
            session.feed(item, transport)
        start_response("202 Accepted", [("Content-Type", "text/plain"),
                                        ("Content-Length", "8")])
        return [b"Accepted"]


class _HttpError(Exception):
    def __init__(self, status: str, code: int, message: str, msg_id: Any = None,
                 data: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.msg_id = msg_id
        self.data = data


class _MethodNotAllowed(Exception):
    pass


class _ClientGone(Exception):
    """The client closed its connection while its request was still running."""


def close_sse_stream(ctx: Any) -> bool:
    """``ctx.close_sse_stream()``, kept as a function for code written against it: close the
    client's connection to the SSE stream of ``ctx``'s request now, leaving the request
    running (handshake era, 2025-11-25 polling). ``False`` where that does not apply."""
    return bool(ctx.close_sse_stream())
