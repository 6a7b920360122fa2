"""Streamable HTTP, client side, on ``requests``: each message its own POST.

The engine sees an ordinary :class:`~mcpsync.transports.base.Transport`. Underneath:

* every request is POSTed on a worker thread (``mcpsync-http-client-*``); its answer comes
  back as JSON or as an SSE stream, whose messages are handed to the engine in order;
* 2026-07-28 requests carry the mirrored headers (``Mcp-Method``, ``Mcp-Name``,
  ``Mcp-Param-*`` from the tools' ``x-mcp-header`` annotations); cancelling one closes its
  response stream, which is how that revision cancels;
* handshake-era sessions keep the ``Mcp-Session-Id``, open the standalone GET stream on a
  background thread, resume broken streams with ``Last-Event-ID`` after the server's
  ``retry:`` delay, re-initialize once when the server says the session expired (404),
  and send DELETE on close;
* a server that answers ``initialize`` with 400/404/405 and no modern error body is tried
  as a 2024-11-05 HTTP+SSE server.

The era, session id and protocol version live in one lock-guarded
:class:`~mcpsync.transports.http_state.SessionState` with a single-flight re-initialize;
reading and bounding bytes is :mod:`mcpsync.transports.http_io`; long-lived SSE streams
(resumption, the standalone GET stream, 2024-11-05 HTTP+SSE) are
:mod:`mcpsync.transports.http_streams`; the tool-header map is
:mod:`mcpsync.transports.http_tools`; the POST on the transport's own session, past
``requests``' per-call machinery, is :mod:`mcpsync.transports.http_post`.

The server is not trusted: an answer (a JSON body, one SSE event) larger than
``max_message_bytes`` fails its call with :class:`~mcpsync.errors.MessageTooLargeError`; a
server silent for ``read_timeout`` fails it with
:class:`~mcpsync.errors.TransportTimeoutError` and frees its thread; a refused or broken
connection is :class:`~mcpsync.errors.ConnectionClosedError`. None of these is an
``MCPError``: that is for what the server said. Reconnecting a stream backs off.

A caller's ``requests.Session`` is used as given and never modified. Thread-safe.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import requests

from ..engine.pool import WorkerPool
from ..errors import ConnectionClosedError, TransportError
from ..protocol import jsonrpc
from ..protocol.envelope import META_VERSION
from ..protocol.http_headers import SESSION_ID, request_headers
from ..protocol.jsonrpc import (
    ErrorResponse,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from .base import CallFailed, Received
from .http_io import (
    DEFAULT_MAX_MESSAGE_BYTES,
    STREAM_ERRORS,
    abort,
    chunks,
    local_error,
    own_session,
    read_body,
    read_some,
)
from .http_post import DirectPost
from .http_state import LEGACY_SSE, MODERN, PROBING, NewSession, SessionState, Snapshot
from .http_streams import SseStreams
from .http_tools import ToolHeaders

logger = logging.getLogger("mcpsync.http.client")

TRANSPORT_ERROR: Final = -32000
_ACCEPT: Final = "application/json, text/event-stream"
_ACK_TIMEOUT: Final = 30.0  # seconds for the 202 to a posted notification or response
_GET_OPEN_WAIT: Final = 2.0  # seconds connect waits for the standalone GET's answer
#: The read timeout when none is given: generous, since a server may think long before
#: its first byte; mcpsync's own server sends an SSE keep-alive every 15 s.
DEFAULT_READ_TIMEOUT: Final = 70.0
_MODERN_CODES: Final = frozenset({-32020, -32021, -32022, -32601, -32602})


class HttpTransport(SseStreams):
    """The client end of Streamable HTTP. See the module docstring. Thread-safe.

    ``max_message_bytes`` bounds one answer (a JSON body, or one SSE event);
    ``read_timeout`` is the longest the server may stay silent on a request's answer
    (seconds between bytes) before that call fails and its thread is freed. ``auth`` (e.g.
    :class:`mcpsync.auth.OAuth`) is set on the transport's own session; an
    :class:`~mcpsync.auth.AuthorizationError` it raises fails the call it concerns.
    """

    def __init__(
        self,
        url: str,
        *,
        session: requests.Session | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_in_flight: int = 256,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        auth: requests.auth.AuthBase | None = None,
    ) -> None:
        if auth is not None and session is not None:
            # A caller's session is never modified: its own ``session.auth`` is the place.
            raise ValueError("pass auth= or session=, not both (set session.auth instead)")
        self.url = url
        self._http = session if session is not None else own_session(url, max_in_flight)
        self._own_http = session is None
        #: The POST without requests' per-call machinery, on our own session only (see
        #: http_post: a caller's session is used exactly as given).
        self._direct = DirectPost(self._http) if session is None else None
        if auth is not None:
            # Every request of this transport (POSTs, the GET stream, DELETE) carries it;
            # a 401/403 challenge is answered inside requests by the auth's response hook.
            self._http.auth = auth
        self._headers = dict(headers or {})
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self.max_message_bytes = max_message_bytes
        self._inbox: queue.SimpleQueue[Received | None] = queue.SimpleQueue()
        #: Where what arrives goes: the inbox the engine's reader thread takes from, or
        #: (after :meth:`deliver_to`) straight to the connection on the arriving thread.
        self._put: Callable[[Received], None] = self._inbox.put
        self._pool = WorkerPool(max_in_flight, name="mcpsync-http-client",
                                max_backlog=16 * max_in_flight)
        self._state = SessionState()
        self._tools = ToolHeaders()
        # Per-call tables, under _lock. Every entry is removed when its call ends: answered,
        # failed, or given up on (cancelled or timed out) — see _exchange and _forget.
        self._lock = threading.Lock()
        self._open: dict[RequestId, requests.Response] = {}
        self._cancelled: set[RequestId] = set()
        self._methods: dict[RequestId, str] = {}
        self._awaiting: set[RequestId] = set()  # 2024-11-05: answered on the GET stream
        self._init_request: Request | None = None
        self._post_url = url           # 2024-11-05: the endpoint event's URL
        self._endpoint_ready = threading.Event()
        self._get_thread: threading.Thread | None = None  # the running GET/SSE reader
        self._started: list[threading.Thread] = []  # every reader started, to join on close
        self._get_ready = threading.Event()  # the GET stream's answer arrived (or failed)
        self._closed = threading.Event()

    @property
    def session_id(self) -> str | None:
        """The handshake era's ``Mcp-Session-Id`` (``None`` when there is none)."""
        return self._state.session_id

    @property
    def protocol_version(self) -> str | None:
        """The revision ``initialize`` agreed on (handshake era only)."""
        return self._state.protocol_version

    @property
    def era(self) -> str:
        """``probing``, ``modern``, ``streamable``, ``legacy-sse``, or ``reinitializing``
        while a new session replaces an expired one."""
        return "reinitializing" if self._state.reinitializing else self._state.era

    # -- Transport -----------------------------------------------------------------------

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        if self._closed.is_set():
            raise ConnectionClosedError("the HTTP transport is closed")
        # Here, not on the thread that POSTs: the sender must get UnencodableMessageError.
        jsonrpc.encode(message)
        if isinstance(message, Request):
            with self._lock:
                self._methods[message.id] = message.method
            if message.method == "initialize":
                self._init_request = message
            try:
                self._submit(lambda: self._exchange(message))
            except BaseException:
                self._forget(message.id)
                raise
            return
        if isinstance(message, Notification) and message.method == "notifications/cancelled":
            target = (message.params or {}).get("requestId")
            modern = self._cancel_response(target)
            if modern:
                return  # 2026-07-28 over HTTP: closing the stream is the cancellation
        if isinstance(message, Notification) and message.method == "notifications/initialized":
            # In order and before connect returns: the initialized notification must reach
            # the server before the first request, and the standalone GET stream must be
            # open by then, because a server may send requests that belong to no POST
            # there (and drop them when no GET stream is open yet).
            self._deliver(message)
            self._start_get_stream()
            # Bounded more tightly than a connect: a server that holds the GET's headers
            # back until its first event has the stream registered all the same.
            self._get_ready.wait(min(self._connect_timeout, _GET_OPEN_WAIT))
            return
        self._submit(lambda: self._deliver(message))

    def receive(self) -> Received | None:
        return self._inbox.get()

    def deliver_to(self, deliver: Callable[[Received], None]) -> None:
        """Hand every message to ``deliver`` (a connection's
        :meth:`~mcpsync.engine.connection.Connection.deliver`) on the thread that read it,
        instead of queueing it for the reader thread: each answer then wakes one thread
        (its caller) rather than two, which is most of a call's CPU on a fast server.
        Each stream is still read by one thread, so its messages keep their order; the end
        of the transport still goes through :meth:`receive`. Before the first message."""
        self._put = deliver

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            responses = list(self._open.values())
            self._open.clear()
        for response in responses:
            abort(response)
        session_id = self._state.session_id
        if session_id is not None:
            try:
                # stream=True, closed unread: no body of a server's is read whole.
                self._http.delete(self._post_url, headers=self._session_headers(
                    self._state.snapshot()), stream=True,
                    timeout=(self._connect_timeout, 5.0)).close()
            except requests.RequestException as exc:
                logger.debug("DELETE of the session failed: %s", exc)
        self._pool.shutdown(2.0)
        deadline = time.monotonic() + 2.0
        with self._lock:
            started = list(self._started)
        for thread in started:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._methods.clear()
            self._cancelled.clear()
            self._awaiting.clear()
        self._inbox.put(None)
        if self._own_http:
            self._http.close()

    # -- per-call bookkeeping ------------------------------------------------------------

    def _submit(self, job: Any) -> None:
        try:
            self._pool.submit(job)
        except RuntimeError as exc:
            raise ConnectionClosedError(f"the HTTP transport is closed: {exc}") from exc

    def _forget(self, request_id: RequestId) -> None:
        with self._lock:
            self._methods.pop(request_id, None)
            self._cancelled.discard(request_id)
            self._awaiting.discard(request_id)
            self._open.pop(request_id, None)

    def _feed(self, message: Message) -> None:
        if isinstance(message, (Response, ErrorResponse)) and message.id is not None:
            with self._lock:
                method = self._methods.pop(message.id, None)
                self._cancelled.discard(message.id)
                self._awaiting.discard(message.id)
            if isinstance(message, Response):
                if method == "initialize":
                    version = message.result.get("protocolVersion")
                    self._state.initialized(None, version if isinstance(version, str)
                                            else None)
                elif method == "tools/list":
                    message = Response(message.id, self._tools.filter(message.result))
        self._put(message)

    def _gave_up(self, request_id: RequestId) -> bool:
        with self._lock:
            return request_id in self._cancelled

    def _fail(self, request_id: RequestId, text: str, code: int = TRANSPORT_ERROR,
              data: Any = None) -> None:
        """The server refused the call (an HTTP status, a body that is no answer): an
        ``MCPError`` for the caller, since the server did say so."""
        if self._gave_up(request_id):
            return  # the caller gave up on it: nobody is waiting
        error: dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            error["data"] = data
        self._feed(ErrorResponse(request_id, error))

    def _fail_local(self, request_id: RequestId, error: TransportError) -> None:
        """The call failed here (unreachable, silent, unreadable or oversized answer)."""
        if self._gave_up(request_id):
            return
        self._put(CallFailed(request_id, error))

    def _session_headers(self, snap: Snapshot) -> dict[str, str]:
        headers = dict(self._headers)
        if snap.session_id is not None:
            headers[SESSION_ID] = snap.session_id
        if snap.protocol_version is not None:
            headers["MCP-Protocol-Version"] = snap.protocol_version
        return headers

    def _headers_for(self, message: Message, snap: Snapshot) -> dict[str, str]:
        headers = {**self._headers, "Content-Type": "application/json", "Accept": _ACCEPT}
        wire = message.to_wire()
        params = wire.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if isinstance(version, str):
            name = params.get("name") if isinstance(params, dict) else None
            tool_map = self._tools.get(str(name)) if name is not None else None
            headers.update(request_headers(wire, version, tool_map))
            return headers
        headers.update(self._session_headers(snap))
        return headers

    def _cancel_response(self, target: Any) -> bool:
        """Close the response of a cancelled request; True if it was a 2026-07-28 one."""
        with self._lock:
            response = self._open.pop(target, None)
            if target in self._awaiting:
                # 2024-11-05: its answer would come on the GET stream; nobody waits now.
                self._awaiting.discard(target)
                self._methods.pop(target, None)
            elif target in self._methods:
                self._cancelled.add(target)  # its exchange is queued or running
        if response is None:
            return self._state.era in (PROBING, MODERN)
        modern = getattr(response, "_mcpsync_modern", False)
        abort(response)
        return bool(modern)

    # -- POST ----------------------------------------------------------------------------

    def _post(self, message: Message, snap: Snapshot,
              read_timeout: float | None = None) -> requests.Response:
        if snap.era == LEGACY_SSE:
            self._endpoint_ready.wait(self._connect_timeout)
        body = jsonrpc.encode(message)
        timeouts = (self._connect_timeout,
                    self._read_timeout if read_timeout is None else read_timeout)
        headers = self._headers_for(message, snap)
        url = self._post_url
        if self._direct is not None and self._direct.usable(url):
            return self._direct.post(url, body, headers, timeouts)
        return self._http.post(url, data=body, headers=headers, stream=True, timeout=timeouts)

    def _deliver(self, message: Message) -> None:
        """POST a notification or a response to a server request (answered at once: 202)."""
        try:
            response = self._post(message, self._state.snapshot(), read_timeout=_ACK_TIMEOUT)
        except requests.RequestException as exc:
            logger.warning("could not send %r: %s", message, exc)
            return
        with response:
            if response.status_code >= 300:
                logger.warning("server refused %r: HTTP %d %s", message, response.status_code,
                               read_some(response, 200))

    def _exchange(self, request: Request) -> None:
        """Run one request to its end. Whatever happens, the caller gets an answer or an
        error (a worker that died silently would leave it waiting for its whole timeout),
        and the call's entries leave the per-call tables."""
        awaiting = False
        try:
            awaiting = self._attempt(request, retried=False)
        except Exception as exc:
            if not self._closed.is_set():
                self._fail_local(request.id, local_error(
                    exc, f"{request.method} to {self._post_url} failed"))
        finally:
            with self._lock:
                keep = (awaiting and request.id in self._methods
                        and request.id not in self._cancelled)
                if keep:
                    self._awaiting.add(request.id)
            if not keep:
                self._forget(request.id)

    def _attempt(self, request: Request, retried: bool) -> bool:
        """One POST of ``request``; True when its answer is to come on the GET stream."""
        self._state.wait_ready(self._connect_timeout + self._read_timeout)
        snap = self._state.snapshot()
        response = self._post(request, snap)
        modern = snap.era in (PROBING, MODERN) and request.method != "initialize"
        response._mcpsync_modern = modern  # type: ignore[attr-defined]
        with self._lock:
            cancelled = request.id in self._cancelled
            if not cancelled:
                self._open[request.id] = response
        if cancelled:
            response.close()
            return False
        try:
            if modern and response.status_code < 300:
                self._state.answered_modern()
            return self._handle(request, response, snap, retried)
        finally:
            with self._lock:
                if self._open.get(request.id) is response:
                    del self._open[request.id]
            response.close()

    def _handle(self, request: Request, response: requests.Response, snap: Snapshot,
                retried: bool) -> bool:
        status = response.status_code
        if request.method == "initialize" and status < 300:
            self._state.initialized(response.headers.get(SESSION_ID), None)
        if status == 202:
            if snap.era == LEGACY_SSE:
                return True  # HTTP+SSE: the answer comes on the GET stream
            self._fail(request.id, "the server accepted the request but sent no answer")
            return False
        if (status == 404 and snap.session_id is not None and request.method != "initialize"
                and not retried and self._init_request is not None):
            response.close()
            if self._state.reinitialize(snap, self._new_session,
                                        self._connect_timeout + self._read_timeout):
                self._start_get_stream()  # the old one ended with the old session (404)
                return self._attempt(request, retried=True)
            self._fail(request.id, "the HTTP session expired and re-initializing failed")
            return False
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if status >= 300 or content_type not in ("application/json", "text/event-stream"):
            return self._refused(request, response)
        if content_type == "application/json":
            self._feed_json(read_body(response, self.max_message_bytes), request)
            return False
        if not self._read_sse(request, response):
            self._resume(request, response)
        return False

    def _refused(self, request: Request, response: requests.Response) -> bool:
        """An HTTP error: the server's JSON-RPC error if it sent one, else its status.
        True when the server turned out to be a 2024-11-05 one (the answer is to come)."""
        status = response.status_code
        text = read_some(response)
        error: Any = None
        try:
            body = jsonrpc.loads(text)
            error = body.get("error") if isinstance(body, dict) else None
        except ValueError:  # not JSON, or nested too deep
            pass
        if (request.method == "initialize" and status in (400, 404, 405)
                and not (isinstance(error, dict) and error.get("code") in _MODERN_CODES)
                and self._state.era != LEGACY_SSE and self._try_legacy_sse(request)):
            return True
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            self._fail(request.id, str(error.get("message", f"HTTP {status}")), error["code"],
                       error.get("data"))
            return False
        self._fail(request.id, f"HTTP {status} from {self._post_url}: {text[:200]}")
        return False

    def _feed_json(self, body: bytes, request: Request) -> None:
        answered = False
        reasons: list[str] = []
        for item in jsonrpc.decode(body):
            if isinstance(item, Invalid):
                reasons.append(item.reason)
                continue
            if isinstance(item, (Response, ErrorResponse)) and item.id == request.id:
                answered = True
            self._feed(item)
        if not answered:
            why = f": {reasons[0][:200]}" if reasons else ""
            self._fail_local(request.id, TransportError(
                f"the server's JSON answer to {request.method} is no answer to it{why}"))

    # -- sessions ------------------------------------------------------------------------

    def _new_session(self) -> NewSession:
        """Initialize a new session like the first one (run by one thread at a time)."""
        init = self._init_request
        assert init is not None
        probe = Request(f"mcpsync-reinit-{id(self)}", "initialize", init.params)
        headers = {**self._headers, "Content-Type": "application/json", "Accept": _ACCEPT}
        timeout = (self._connect_timeout, self._read_timeout)
        try:
            with self._http.post(self._post_url, data=jsonrpc.encode(probe), headers=headers,
                                 stream=True, timeout=timeout) as response:
                if response.status_code != 200:
                    return None
                session_id = response.headers.get(SESSION_ID)
                body = self._first_message(response)
            if not isinstance(body, Response):
                return None
            version = body.result.get("protocolVersion")
            version = version if isinstance(version, str) else None
            fresh = Snapshot(self._state.era, session_id, version, -1)
            initialized = Notification("notifications/initialized")
            self._http.post(self._post_url, data=jsonrpc.encode(initialized),
                            headers=self._headers_for(initialized, fresh), stream=True,
                            timeout=(self._connect_timeout, _ACK_TIMEOUT)).close()
        except (*STREAM_ERRORS, TransportError) as exc:
            logger.warning("re-initializing the expired session failed: %s", exc)
            return None
        logger.info("the HTTP session expired; re-initialized as a new session")
        return session_id, version

    def _first_message(self, response: requests.Response) -> Message | None:
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            parser = self._parser()
            for chunk in chunks(response):
                for event in parser.feed(chunk):
                    if event.data.strip():
                        items = jsonrpc.decode(event.data)
                        return items[0] if items and not isinstance(items[0], Invalid) else None
            return None
        items = jsonrpc.decode(read_body(response, self.max_message_bytes))
        return items[0] if items and not isinstance(items[0], Invalid) else None
