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
:class:`~mcpsync.transports.http.state.SessionState` with a single-flight re-initialize;
what the transport knows of each call in flight is one
:class:`~mcpsync.transports.http.table.CallTable`; reading and bounding bytes is
:mod:`mcpsync.transports.http.io`; long-lived SSE streams
(resumption, the standalone GET stream, 2024-11-05 HTTP+SSE) are
:mod:`mcpsync.transports.http.streams`; what a JSON answer, a refusal or a re-initialize
says is :mod:`mcpsync.transports.http.answers`; the tool-header map is
:mod:`mcpsync.transports.http.tools`; the POST on the transport's own session, past
``requests``' per-call machinery, is :mod:`mcpsync.transports.http.post`; the bound on a
request sent with no caller's deadline is :mod:`mcpsync.transports.http.opening`.

The server is not trusted: an answer (a JSON body, one SSE event) larger than
``max_message_bytes`` fails its call with :class:`~mcpsync.errors.MessageTooLargeError`; a
server silent for ``read_timeout`` fails it with
:class:`~mcpsync.errors.TransportTimeoutError` and frees its thread; a refused or broken
connection is :class:`~mcpsync.errors.ConnectionClosedError`. None of these is an
``MCPError``: that is for what the server said. Reconnecting a stream backs off.

A call's whole exchange (connect, head, body; for an SSE answer, until the call's own
answer, resumptions included) ends by the deadline its caller waits with
(:meth:`HttpTransport.send_call`), not only by per-read timeouts, and a call given up on
(timed out, cancelled, interrupted, or the transport closed) has its exchange ended at once
(:meth:`HttpTransport.abandon`): its socket is shut down, so its thread returns and the
connection is never reused (:mod:`mcpsync.transports.http.calls`). That needs the
transport's own session (mounted with
:class:`~mcpsync.transports.http.deadline.DeadlineAdapter`): a caller's
``requests.Session`` is used as given and never modified, so its calls get only their read
timeouts lowered to what is left of the deadline, and an answer already under way aborted.
Thread-safe.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import requests

from ...errors import ConnectionClosedError, TransportError
from ...protocol import jsonrpc
from ...protocol.deadline import Deadline
from ...protocol.http_headers import SESSION_ID, request_headers
from ...protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from ...protocol.versions import META_VERSION
from ...threads.pool import WorkerPool
from ..base import CallFailed, Received
from .answers import ACCEPT, ACK_TIMEOUT, Answers
from .calls import CallExchanges
from .deadline import exchange, timeouts, tracked
from .io import (
    DEFAULT_MAX_MESSAGE_BYTES,
    abort,
    local_error,
    own_session,
    read_body,
    read_some,
)
from .opening import NO_DEADLINE, OpenRequests
from .post import DirectPost
from .state import LEGACY_SSE, MODERN, PROBING, SessionState, Snapshot
from .streams import GET_KEY, SseStreams
from .table import CallTable
from .tools import ToolHeaders

logger = logging.getLogger("mcpsync.http.client")

TRANSPORT_ERROR: Final = -32000
_DELETE_BUDGET: Final = 5.0  # seconds close() gives the session's DELETE, in all
_GET_OPEN_WAIT: Final = 2.0  # seconds connect waits for the standalone GET's answer
#: The read timeout when none is given: generous, since a server may think long before
#: its first byte; mcpsync's own server sends an SSE keep-alive every 15 s.
DEFAULT_READ_TIMEOUT: Final = 70.0


class HttpTransport(Answers, SseStreams, OpenRequests):
    """The client end of Streamable HTTP. See the module docstring. Thread-safe.

    ``max_message_bytes`` bounds one answer (a JSON body, or one SSE event);
    ``read_timeout`` is the longest the server may stay silent on a request's answer
    (seconds between bytes) before that call fails and its thread is freed.
    ``head_timeout`` (default ``connect_timeout + read_timeout``) bounds, in all, the
    beginning of what has no caller's deadline: the standalone GET stream's connect and
    head, and a request sent with :meth:`send` (relayed by ``mcpsync run URL``, or a
    ``subscriptions/listen``), whose connect, head and JSON body must come within it
    (:mod:`~mcpsync.transports.http.opening`). ``auth`` (e.g.
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
        head_timeout: float | None = None,
    ) -> None:
        if auth is not None and session is not None:
            # A caller's session is never modified: its own ``session.auth`` is the place.
            raise ValueError("pass auth= or session=, not both (set session.auth instead)")
        self.url = url
        self._http = session if session is not None else own_session(url, max_in_flight)
        self._own_http = session is None
        #: The POST without requests' per-call machinery, on our own session only (see
        #: post.py: a caller's session is used exactly as given).
        self._direct = DirectPost(self._http) if session is None else None
        if auth is not None:
            # Every request of this transport (POSTs, the GET stream, DELETE) carries it;
            # a 401/403 challenge is answered inside requests by the auth's response hook.
            self._http.auth = auth
        self._headers = dict(headers or {})
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._head_timeout = (connect_timeout + read_timeout if head_timeout is None
                              else head_timeout)
        self.max_message_bytes = max_message_bytes
        self._inbox: queue.SimpleQueue[Received | None] = queue.SimpleQueue()
        #: Where what arrives goes: the inbox the engine's reader thread takes from, or
        #: (after :meth:`deliver_to`) straight to the connection on the arriving thread.
        self._put: Callable[[Received], None] = self._inbox.put
        self._pool = WorkerPool(max_in_flight, name="mcpsync-http-client",
                                max_backlog=16 * max_in_flight)
        self._state = SessionState()
        self._tools = ToolHeaders()
        # Every entry of a call is removed when it ends: answered, failed, or given up on
        # (cancelled or timed out) — see _exchange and _forget.
        self._table = CallTable()
        self._exchanges = CallExchanges()  # each running exchange, to end it early
        #: Guards the reader threads below (the GET stream's, the HTTP+SSE one's).
        self._lock = threading.Lock()
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
        if isinstance(message, Request):
            self._send_open(message)  # no caller's deadline: see opening.py
            return
        if self._closed.is_set():
            raise ConnectionClosedError("the HTTP transport is closed")
        # Here, not on the thread that POSTs: the sender must get UnencodableMessageError.
        jsonrpc.encode(message)
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

    def send_call(self, message: Message, deadline: Deadline,
                  related_request_id: RequestId | None = None) -> None:
        """:class:`~mcpsync.transports.base.CallControl`: POST a request on a worker
        thread, its whole exchange ended by ``deadline`` (the caller's own). Any other
        message (a cancellation) goes as :meth:`send` sends it: never waited for here."""
        if not isinstance(message, Request):
            self.send(message, related_request_id)
            return
        request = message
        self._begin(request)
        try:
            self._submit(lambda: self._exchange(request, deadline))
        except BaseException:
            self._forget(request.id)
            raise

    def _begin(self, request: Request) -> None:
        if self._closed.is_set():
            raise ConnectionClosedError("the HTTP transport is closed")
        jsonrpc.encode(request)  # here: the sender must get UnencodableMessageError
        self._table.begin(request.id, request.method)
        if request.method == "initialize":
            self._init_request = request

    def abandon(self, request_id: RequestId) -> None:
        """:class:`~mcpsync.transports.base.CallControl`: nobody waits for ``request_id``
        any more. Its exchange is ended now (or, still queued, never started), so the
        thread carrying it returns at once whatever the server does."""
        self._cancel_response(request_id)

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
        self._exchanges.end_all("closed")
        for key, response in self._table.sweep():
            # A call's answer was freed with its exchange (end_all): its own thread closes
            # it. The GET stream's body has no exchange; nor has a caller's session.
            if key == GET_KEY or not tracked(response):
                abort(response)
        session_id = self._state.session_id
        if session_id is not None:
            budget = Deadline(_DELETE_BUDGET, "DELETE of the HTTP session")
            try:
                # stream=True, closed unread: no body of a server's is read whole.
                with exchange(budget):
                    self._http.delete(self._post_url, headers=self._session_headers(
                        self._state.snapshot()), stream=True,
                        timeout=timeouts(budget, self._connect_timeout, 5.0)).close()
            except (requests.RequestException, OSError) as exc:
                logger.debug("DELETE of the session failed: %s", exc)
        self._pool.shutdown(2.0)
        deadline = time.monotonic() + 2.0
        with self._lock:
            started = list(self._started)
        for thread in started:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._table.clear()
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
        self._table.forget(request_id)

    def _feed(self, message: Message) -> None:
        if isinstance(message, (Response, ErrorResponse)) and message.id is not None:
            method = self._table.answered(message.id)
            if isinstance(message, Response):
                if method == "initialize":
                    version = message.result.get("protocolVersion")
                    self._state.initialized(None, version if isinstance(version, str)
                                            else None)
                elif method == "tools/list":
                    message = Response(message.id, self._tools.filter(message.result))
        self._put(message)

    def _gave_up(self, request_id: RequestId) -> bool:
        """Whether nobody waits for ``request_id``'s outcome: cancelled, or its exchange
        ended or past its deadline (a stream cut at the deadline is the caller's timeout,
        not a broken stream)."""
        if self._table.cancelled(request_id):
            return True
        return self._exchanges.over(request_id)

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
        headers = {**self._headers, "Content-Type": "application/json", "Accept": ACCEPT}
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
        """End the exchange of a cancelled or abandoned request at once (its head may still
        be arriving) and close its response; True if it was a 2026-07-28 one. Whoever
        cancels (the engine, or the host ``mcpsync run URL`` relays for) waits no more."""
        response, ours = self._table.cancel(target)
        if ours or response is not None:  # never another key's exchange (the GET stream)
            self._exchanges.end(target, "cancelled")
        if response is None:
            return self._state.era in (PROBING, MODERN)
        modern = getattr(response, "_mcpsync_modern", False)
        if not tracked(response):
            # A caller's session: its exchange can not be ended otherwise. Ours was, just
            # above; either way the thread reading the response closes it, never this one
            # (see deadline.py: a connection given back twice is pooled twice).
            abort(response)
        return bool(modern)

    # -- POST ----------------------------------------------------------------------------

    def _post(self, message: Message, snap: Snapshot, read_timeout: float | None = None,
              deadline: Deadline = NO_DEADLINE) -> requests.Response:
        if snap.era == LEGACY_SSE:
            self._endpoint_ready.wait(deadline.cap(self._connect_timeout))
        body = jsonrpc.encode(message)
        bounds = timeouts(deadline, self._connect_timeout,
                          self._read_timeout if read_timeout is None else read_timeout)
        headers = self._headers_for(message, snap)
        url = self._post_url
        if self._direct is not None and self._direct.usable(url):
            return self._direct.post(url, body, headers, bounds)
        return self._http.post(url, data=body, headers=headers, stream=True, timeout=bounds)

    def _deliver(self, message: Message) -> None:
        """POST a notification or a response to a server request (answered at once: 202),
        the whole exchange within ``ACK_TIMEOUT``."""
        deadline = Deadline(ACK_TIMEOUT, f"sending {getattr(message, 'method', 'an answer')}")
        try:
            with self._exchanges.running(object(), deadline):
                response = self._post(message, self._state.snapshot(),
                                      read_timeout=ACK_TIMEOUT, deadline=deadline)
                with response:
                    if response.status_code >= 300:
                        logger.warning("server refused %r: HTTP %d %s", message,
                                       response.status_code, read_some(response, 200))
        except (requests.RequestException, OSError) as exc:  # DeadlineExceeded is one
            logger.warning("could not send %r: %s", message, exc)

    def _exchange(self, request: Request, deadline: Deadline) -> None:
        """Run one request to its end. Whatever happens, the caller gets an answer or an
        error (a worker that died silently would leave it waiting for its whole timeout),
        and the call's entries leave the per-call tables. Past ``deadline`` the caller has
        stopped waiting (it reports the timeout and tells the server): nothing to report."""
        awaiting = False
        try:
            # No watchdog: the caller waits with this deadline and, when it passes, gives
            # the call up (abandon), which ends the exchange.
            with self._exchanges.running(request.id, deadline, watch=False):
                if not self._gave_up(request.id):  # abandoned while queued
                    awaiting = self._attempt(request, False, deadline)
        except Exception as exc:
            if not (self._closed.is_set() or deadline.expired()):
                self._fail_local(request.id, local_error(
                    exc, f"{request.method} to {self._post_url} failed"))
        finally:
            if not (awaiting and self._table.to_await(request.id)):
                self._forget(request.id)

    def _attempt(self, request: Request, retried: bool, deadline: Deadline) -> bool:
        """One POST of ``request``; True when its answer is to come on the GET stream."""
        self._state.wait_ready(min(self._connect_timeout + self._read_timeout,
                                  deadline.remaining()))
        snap = self._state.snapshot()
        response = self._post(request, snap, deadline=deadline)
        modern = snap.era in (PROBING, MODERN) and request.method != "initialize"
        response._mcpsync_modern = modern  # type: ignore[attr-defined]
        if not self._table.opened(request.id, response):
            response.close()
            return False
        try:
            if modern and response.status_code < 300:
                self._state.answered_modern()
            return self._handle(request, response, snap, retried, deadline)
        finally:
            self._table.read(request.id, response)
            response.close()

    def _handle(self, request: Request, response: requests.Response, snap: Snapshot,
                retried: bool, deadline: Deadline) -> bool:
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
            if self._state.reinitialize(snap, self._new_session, min(
                    self._connect_timeout + self._read_timeout, deadline.remaining())):
                self._start_get_stream()  # the old one ended with the old session (404)
                return self._attempt(request, True, deadline)
            self._fail(request.id, "the HTTP session expired and re-initializing failed")
            return False
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if status >= 300 or content_type not in ("application/json", "text/event-stream"):
            return self._refused(request, response)
        if content_type == "application/json":
            self._feed_json(read_body(response, self.max_message_bytes), request)
            return False
        if not self._read_sse(request, response):
            self._resume(request, response, deadline)
        return False
