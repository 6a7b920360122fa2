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

A caller's ``requests.Session`` is used as given and never modified. Thread-safe.
"""

from __future__ import annotations

import json
import logging
import queue
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import urljoin

import requests
import urllib3

from ..engine.pool import WorkerPool
from ..errors import ConnectionClosedError
from ..protocol import jsonrpc
from ..protocol.envelope import META_VERSION
from ..protocol.http_headers import SESSION_ID, request_headers, valid_tools
from ..protocol.jsonrpc import ErrorResponse, Message, Notification, Request, RequestId, Response
from ..protocol.sse import SseParser
from .base import Received

logger = logging.getLogger("mcpsync.http.client")

TRANSPORT_ERROR: Final = -32000
_ACCEPT: Final = "application/json, text/event-stream"
_MAX_RESUMES: Final = 5
_ACK_TIMEOUT: Final = 30.0  # seconds for the 202 to a posted notification or response
_GET_OPEN_WAIT: Final = 2.0  # seconds connect waits for the standalone GET's answer
_MODERN_CODES: Final = frozenset({-32020, -32021, -32022, -32601, -32602})
#: What reading a response can raise, including when another thread closes it (which is
#: how a cancelled request's stream is dropped). Reading ``response.raw`` directly raises
#: urllib3's own errors (a broken chunked stream: ``ProtocolError``), not requests' ones.
_STREAM_ERRORS: Final = (requests.RequestException, urllib3.exceptions.HTTPError, OSError,
                         ValueError, AttributeError)


class HttpTransport:
    """The client end of Streamable HTTP. See the module docstring. Thread-safe."""

    def __init__(
        self,
        url: str,
        *,
        session: requests.Session | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        max_in_flight: int = 256,
    ) -> None:
        self.url = url
        self._http = session if session is not None else _own_session(url, max_in_flight)
        self._own_http = session is None
        self._headers = dict(headers or {})
        self._connect_timeout = connect_timeout
        self._inbox: queue.SimpleQueue[Received | None] = queue.SimpleQueue()
        self._pool = WorkerPool(max_in_flight, name="mcpsync-http-client",
                                max_backlog=16 * max_in_flight)
        self._lock = threading.Lock()
        self._open: dict[RequestId, requests.Response] = {}
        self._cancelled: set[RequestId] = set()
        self._methods: dict[RequestId, str] = {}
        self._tool_headers: dict[str, dict[str, tuple[str, ...]]] = {}
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._init_request: Request | None = None
        self._post_url = url           # 2024-11-05: the endpoint event's URL
        self._legacy_sse = False
        self._endpoint_ready = threading.Event()
        self._get_thread: threading.Thread | None = None  # the running GET/SSE reader
        self._started: list[threading.Thread] = []  # every reader started, to join on close
        self._get_ready = threading.Event()  # the GET stream's answer arrived (or failed)
        self._closed = threading.Event()

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
            self._submit(lambda: self._exchange(message))
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

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            responses = list(self._open.values())
            self._open.clear()
        for response in responses:
            _abort(response)
        if self.session_id is not None:
            try:
                self._http.delete(self._post_url, headers=self._session_headers(),
                                  timeout=(self._connect_timeout, 5.0))
            except requests.RequestException as exc:
                logger.debug("DELETE of the session failed: %s", exc)
        self._pool.shutdown(2.0)
        deadline = time.monotonic() + 2.0
        with self._lock:
            started = list(self._started)
        for thread in started:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._inbox.put(None)
        if self._own_http:
            self._http.close()

    # -- helpers -------------------------------------------------------------------------

    def _submit(self, job: Any) -> None:
        try:
            self._pool.submit(job)
        except RuntimeError as exc:
            raise ConnectionClosedError(f"the HTTP transport is closed: {exc}") from exc

    def _feed(self, message: Message) -> None:
        if isinstance(message, (Response, ErrorResponse)) and message.id is not None:
            with self._lock:
                method = self._methods.pop(message.id, None)
                self._cancelled.discard(message.id)
            if isinstance(message, Response):
                if method == "initialize":
                    version = message.result.get("protocolVersion")
                    self.protocol_version = version if isinstance(version, str) else None
                elif method == "tools/list":
                    message = self._filter_tools(message)
        self._inbox.put(message)

    def _fail(self, request_id: RequestId, text: str, code: int = TRANSPORT_ERROR,
              data: Any = None) -> None:
        with self._lock:
            if request_id in self._cancelled:
                return  # the caller gave up on it: nobody is waiting
        error: dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            error["data"] = data
        self._feed(ErrorResponse(request_id, error))

    def _filter_tools(self, message: Response) -> Response:
        tools = message.result.get("tools")
        if not isinstance(tools, list) or not tools:
            return message
        kept, maps = valid_tools([t for t in tools if isinstance(t, dict)])
        with self._lock:
            for tool in kept:
                self._tool_headers.pop(str(tool.get("name")), None)
            self._tool_headers.update(maps)
        return Response(message.id, {**message.result, "tools": kept})

    def _session_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self.session_id is not None:
            headers[SESSION_ID] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _headers_for(self, message: Message) -> dict[str, str]:
        headers = {**self._headers, "Content-Type": "application/json", "Accept": _ACCEPT}
        wire = message.to_wire()
        params = wire.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if isinstance(version, str):
            name = params.get("name") if isinstance(params, dict) else None
            with self._lock:
                tool_map = self._tool_headers.get(str(name)) if name is not None else None
            headers.update(request_headers(wire, version, tool_map))
            return headers
        headers.update(self._session_headers())
        return headers

    def _cancel_response(self, target: Any) -> bool:
        """Close the response of a cancelled request; True if it was a 2026-07-28 one."""
        with self._lock:
            response = self._open.pop(target, None)
            if target in self._methods:
                self._cancelled.add(target)
        if response is None:
            return self.session_id is None and not self._legacy_sse
        modern = getattr(response, "_mcpsync_modern", False)
        _abort(response)
        return bool(modern)

    # -- POST ----------------------------------------------------------------------------

    def _post(self, message: Message, read_timeout: float | None = None) -> requests.Response:
        if self._legacy_sse:
            self._endpoint_ready.wait(self._connect_timeout)
        body = jsonrpc.encode(message)
        return self._http.post(self._post_url, data=body, headers=self._headers_for(message),
                               stream=True, timeout=(self._connect_timeout, read_timeout))

    def _deliver(self, message: Message) -> None:
        """POST a notification or a response to a server request (answered at once: 202)."""
        try:
            response = self._post(message, read_timeout=_ACK_TIMEOUT)
        except requests.RequestException as exc:
            logger.warning("could not send %r: %s", message, exc)
            return
        with response:
            if response.status_code >= 300:
                logger.warning("server refused %r: HTTP %d %s", message, response.status_code,
                               response.text[:200])

    def _exchange(self, request: Request, *, retried: bool = False) -> None:
        try:
            response = self._post(request)
        except requests.RequestException as exc:
            self._fail(request.id, f"HTTP request to {self._post_url} failed: {exc}")
            return
        modern = not self._legacy_sse and self.session_id is None and (
            request.method != "initialize")
        response._mcpsync_modern = modern  # type: ignore[attr-defined]
        with self._lock:
            cancelled = request.id in self._cancelled
            if not cancelled:
                self._open[request.id] = response
        if cancelled:
            response.close()
            return
        try:
            self._handle(request, response, retried)
        except _STREAM_ERRORS as exc:
            if not self._closed.is_set():
                self._fail(request.id, f"HTTP response for {request.method} failed: {exc}")
        finally:
            with self._lock:
                self._open.pop(request.id, None)
            response.close()

    def _handle(self, request: Request, response: requests.Response, retried: bool) -> None:
        status = response.status_code
        if request.method == "initialize" and status < 300:
            session_id = response.headers.get(SESSION_ID)
            if session_id:
                self.session_id = session_id
        if status == 202:
            if not self._legacy_sse:
                self._fail(request.id, "the server accepted the request but sent no answer")
            return  # HTTP+SSE: the answer comes on the GET stream
        if (status == 404 and self.session_id is not None and request.method != "initialize"
                and not retried and self._init_request is not None):
            response.close()
            if self._reinitialize():
                self._exchange(request, retried=True)
            else:
                self._fail(request.id, "the HTTP session expired and re-initializing failed")
            return
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if status >= 300 or content_type not in ("application/json", "text/event-stream"):
            self._refused(request, response)
            return
        if content_type == "application/json":
            self._feed_json(response.content, request.id)
            return
        if not self._read_sse(request, response):
            self._resume(request, response)

    def _refused(self, request: Request, response: requests.Response) -> None:
        status = response.status_code
        text = response.text[:2000]
        error: Any = None
        try:
            body = json.loads(text)
            error = body.get("error") if isinstance(body, dict) else None
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            pass
        if (request.method == "initialize" and status in (400, 404, 405)
                and not (isinstance(error, dict) and error.get("code") in _MODERN_CODES)
                and not self._legacy_sse and self._try_legacy_sse(request)):
            return
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            self._fail(request.id, str(error.get("message", f"HTTP {status}")), error["code"],
                       error.get("data"))
            return
        self._fail(request.id, f"HTTP {status} from {self._post_url}: {text[:200]}")

    def _feed_json(self, body: bytes, request_id: RequestId) -> None:
        answered = False
        for item in jsonrpc.decode(body):
            if isinstance(item, (Request, Notification, Response, ErrorResponse)):
                if isinstance(item, (Response, ErrorResponse)) and item.id == request_id:
                    answered = True
                self._feed(item)
        if not answered:
            self._fail(request_id, "the server's JSON answer did not answer the request")

    def _read_sse(self, request: Request | None, response: requests.Response,
                  parser: SseParser | None = None) -> bool:
        """Hand a stream's messages to the engine; True once ``request`` is answered."""
        parser = parser or SseParser()
        response._mcpsync_parser = parser  # type: ignore[attr-defined]
        for chunk in _chunks(response):
            for event in parser.feed(chunk):
                if event.event == "endpoint":
                    if self._legacy_sse:  # only the 2024-11-05 stream may move the endpoint
                        self._post_url = urljoin(self.url, event.data.strip())
                        self._endpoint_ready.set()
                    continue
                if not event.data.strip():
                    continue  # a priming event
                for item in jsonrpc.decode(event.data):
                    if isinstance(item, (Request, Notification, Response, ErrorResponse)):
                        self._feed(item)
                        if request is not None and isinstance(
                                item, (Response, ErrorResponse)) and item.id == request.id:
                            return True
        return False

    def _resume(self, request: Request, response: requests.Response) -> None:
        """A handshake-era stream broke before its answer: reconnect with Last-Event-ID."""
        parser: SseParser = getattr(response, "_mcpsync_parser", SseParser())
        with self._lock:
            if request.id in self._cancelled or self._closed.is_set():
                return
        if self.session_id is None or parser.last_event_id is None:
            self._fail(request.id, f"the stream of {request.method} ended before its answer")
            return
        for _ in range(_MAX_RESUMES):
            delay = (parser.retry_ms if parser.retry_ms is not None else 1000) / 1000.0
            if self._closed.wait(delay):
                return
            headers = {**self._session_headers(), "Accept": "text/event-stream",
                       "Last-Event-ID": parser.last_event_id or ""}
            try:
                resumed = self._http.get(self._post_url, headers=headers, stream=True,
                                         timeout=(self._connect_timeout, None))
            except requests.RequestException as exc:
                logger.debug("resuming %s failed: %s", request.method, exc)
                continue
            with self._lock:
                if request.id in self._cancelled:
                    resumed.close()
                    return
                self._open[request.id] = resumed
            with resumed:
                if resumed.status_code != 200:
                    break
                if self._read_sse(request, resumed, parser):
                    return
        self._fail(request.id, f"the stream of {request.method} broke and could not be resumed")

    # -- sessions ------------------------------------------------------------------------

    def _reinitialize(self) -> bool:
        init = self._init_request
        assert init is not None
        self.session_id = None
        self.protocol_version = None
        probe = Request(f"mcpsync-reinit-{id(self)}", "initialize", init.params)
        try:
            response = self._http.post(self._post_url, data=jsonrpc.encode(probe),
                                       headers=self._headers_for(probe),
                                       timeout=(self._connect_timeout, 30.0))
            if response.status_code != 200:
                return False
            self.session_id = response.headers.get(SESSION_ID)
            body = _first_message(response)
            if not isinstance(body, Response):
                return False
            version = body.result.get("protocolVersion")
            self.protocol_version = version if isinstance(version, str) else None
            initialized = Notification("notifications/initialized")
            self._http.post(self._post_url, data=jsonrpc.encode(initialized),
                            headers=self._headers_for(initialized),
                            timeout=(self._connect_timeout, 30.0)).close()
        except (requests.RequestException, ValueError) as exc:
            logger.warning("re-initializing the expired session failed: %s", exc)
            return False
        logger.info("the HTTP session expired; re-initialized as a new session")
        self._start_get_stream()  # the old one ended with the old session (404)
        return True

    def _start_get_stream(self) -> None:
        with self._lock:
            running = self._get_thread is not None
            if not (self._legacy_sse or self.session_id is None or running):
                self._get_thread = threading.Thread(target=self._get_loop, daemon=True,
                                                    name="mcpsync-http-client-get")
                self._started.append(self._get_thread)
                self._get_thread.start()
                return
        self._get_ready.set()

    def _get_loop(self) -> None:
        """The standalone stream: server requests and notifications not tied to a request."""
        try:
            self._get_streams()
        finally:
            with self._lock:
                if self._get_thread is threading.current_thread():
                    self._get_thread = None

    def _get_streams(self) -> None:
        session = self.session_id
        parser = SseParser()
        failures = 0
        while not self._closed.is_set() and failures < _MAX_RESUMES:
            if self.session_id != session:  # re-initialized: the new session's stream
                session, parser, failures = self.session_id, SseParser(), 0
            headers = {**self._session_headers(), "Accept": "text/event-stream"}
            if parser.last_event_id:
                headers["Last-Event-ID"] = parser.last_event_id
            try:
                response = self._http.get(self._post_url, headers=headers, stream=True,
                                          timeout=(self._connect_timeout, None))
            except requests.RequestException as exc:
                failures += 1
                logger.debug("GET stream failed: %s", exc)
                self._get_ready.set()
            else:
                with self._lock:
                    self._open["mcpsync-get"] = response
                self._get_ready.set()
                with response:
                    if response.status_code in (404, 405):
                        # No standalone stream here, or the session is gone. Decided under
                        # the lock that _start_get_stream takes, so that a re-initialize
                        # either finds this thread gone or is seen by it.
                        with self._lock:
                            if self.session_id == session:
                                self._get_thread = None
                                return
                        continue
                    if response.status_code != 200:
                        failures += 1
                    else:
                        failures = 0
                        try:
                            self._read_sse(None, response, parser)
                        except _STREAM_ERRORS as exc:
                            logger.debug("GET stream broke: %s", exc)
            delay = (parser.retry_ms if parser.retry_ms is not None else 1000) / 1000.0
            if self._closed.wait(delay):
                return

    def _try_legacy_sse(self, request: Request) -> bool:
        """Try the 2024-11-05 transport: GET the URL, wait for the ``endpoint`` event."""
        try:
            response = self._http.get(self.url, headers={**self._headers,
                                                         "Accept": "text/event-stream"},
                                      stream=True, timeout=(self._connect_timeout, None))
        except requests.RequestException:
            return False
        if response.status_code != 200 or not response.headers.get(
                "Content-Type", "").startswith("text/event-stream"):
            response.close()
            return False
        self._legacy_sse = True
        with self._lock:
            self._open["mcpsync-get"] = response

        def read() -> None:
            with response:
                try:
                    self._read_sse(None, response)
                except _STREAM_ERRORS as exc:
                    logger.debug("HTTP+SSE stream ended: %s", exc)
            if not self._closed.is_set():
                self._inbox.put(None)  # the one stream is the connection: it is over

        self._get_thread = threading.Thread(target=read, daemon=True,
                                            name="mcpsync-http-client-sse")
        self._started.append(self._get_thread)
        self._get_thread.start()
        if not self._endpoint_ready.wait(self._connect_timeout):
            return False
        self._deliver_legacy(request)
        return True

    def _deliver_legacy(self, request: Request) -> None:
        try:
            response = self._post(request)
            response.close()
        except requests.RequestException as exc:
            self._fail(request.id, f"HTTP request to {self._post_url} failed: {exc}")


def _own_session(url: str, pool_size: int) -> requests.Session:
    """A session for this endpoint. The environment's proxy and CA-bundle settings are read
    once, here: requests would otherwise rescan ``os.environ`` on every request, which
    costs about a millisecond per call."""
    import os

    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.proxies.update(requests.utils.get_environ_proxies(url))
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    session.trust_env = False
    return session


def _abort(response: requests.Response) -> None:
    """Close a response that another thread may be reading. Its socket is shut down first:
    that makes a blocked read return at once, where ``close()`` alone would wait for the
    reader (it needs the buffered reader's lock) until the server sends something."""
    connection = getattr(response.raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if not isinstance(sock, socket.socket):
        # A response marked "will close" no longer has it on its connection: look in the
        # file it reads from (http.client's SocketIO).
        reader = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(reader, "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    response.close()


def _chunks(response: requests.Response) -> Iterator[bytes]:
    raw = response.raw
    while True:
        chunk = raw.read1(65536) if hasattr(raw, "read1") else raw.read(65536)
        if not chunk:
            return
        yield chunk


def _first_message(response: requests.Response) -> Message | None:
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        parser = SseParser()
        for event in parser.feed(response.content):
            if event.data.strip():
                items = jsonrpc.decode(event.data)
                if items and not isinstance(items[0], jsonrpc.Invalid):
                    return items[0]
        return None
    items = jsonrpc.decode(response.content)
    return items[0] if items and not isinstance(items[0], jsonrpc.Invalid) else None
