"""The HTTP client's long-lived SSE streams: reading one, resuming a broken one, the
handshake era's standalone GET stream, and the 2024-11-05 HTTP+SSE stream.

A part of :class:`~mcpsync.transports.http.transport.HttpTransport`, kept apart because streams have
their own concerns: each event is bounded (``max_message_bytes``), reconnecting backs off
(:class:`~mcpsync.transports.http.io.Backoff`) and a stream that is quiet for
``read_timeout`` is reopened, so no thread outlives ``close()``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin

import requests

from ...errors import ConnectionClosedError, TransportError
from ...protocol import jsonrpc
from ...protocol.deadline import Deadline
from ...protocol.jsonrpc import ErrorResponse, Message, Notification, Request, RequestId, Response
from ...protocol.sse import SseParser
from ..base import Received
from .calls import CallExchanges
from .deadline import timeouts
from .io import STREAM_ERRORS, Backoff, abort, chunks, local_error
from .state import LEGACY_SSE, SessionState, Snapshot
from .table import CallTable

logger = logging.getLogger("mcpsync.http.client")

_MAX_RESUMES: Final = 5
#: The key of the standalone GET stream (or 2024-11-05 stream) in ``_open`` and among the
#: exchanges: only its head is an exchange, its body lives as long as the session.
GET_KEY: Final = "mcpsync-get"


class SseStreams:
    """Stream handling for :class:`~mcpsync.transports.http.transport.HttpTransport` (a mixin: the
    attributes and methods declared below are the transport's)."""

    url: str
    max_message_bytes: int
    _http: requests.Session
    _headers: dict[str, str]
    _connect_timeout: float
    _read_timeout: float
    _head_timeout: float  # connect_timeout + read_timeout unless given
    _inbox: queue.SimpleQueue[Received | None]
    _state: SessionState
    _lock: threading.Lock  # guards the reader threads
    _table: CallTable
    _post_url: str
    _endpoint_ready: threading.Event
    _get_thread: threading.Thread | None
    _started: list[threading.Thread]
    _get_ready: threading.Event
    _closed: threading.Event
    _exchanges: CallExchanges

    if TYPE_CHECKING:
        def _feed(self, message: Message) -> None: ...
        def _gave_up(self, request_id: RequestId) -> bool: ...
        def _fail_local(self, request_id: RequestId, error: TransportError) -> None: ...
        def _forget(self, request_id: RequestId) -> None: ...
        def _session_headers(self, snap: Snapshot) -> dict[str, str]: ...
        def _post(self, message: Message, snap: Snapshot,
                  read_timeout: float | None = None) -> requests.Response: ...

    def _parser(self) -> SseParser:
        return SseParser(max_event_bytes=self.max_message_bytes)

    def _read_sse(self, request: Request | None, response: requests.Response,
                  parser: SseParser | None = None) -> bool:
        """Hand a stream's messages to the engine; True once ``request`` is answered."""
        parser = parser or self._parser()
        response._mcpsync_parser = parser  # type: ignore[attr-defined]
        for chunk in chunks(response):
            for event in parser.feed(chunk):
                if event.event == "endpoint":
                    if self._state.era == LEGACY_SSE:  # only that stream may move it
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
                    elif item.answer_to is not None:  # an answer we can not read
                        self._fail_local(item.answer_to, TransportError(
                            f"the server's answer could not be read: {item.reason}"))
                        if request is not None and item.answer_to == request.id:
                            return True
        return False

    def _resume(self, request: Request, response: requests.Response,
                deadline: Deadline) -> None:
        """A handshake-era stream broke before its answer: reconnect with Last-Event-ID,
        until the answer, the call's ``deadline``, or the caller giving up (whose exchange
        then ends: each GET fails at once, and the loop sees it gave up)."""
        parser: SseParser = getattr(response, "_mcpsync_parser", None) or self._parser()
        if self._gave_up(request.id) or self._closed.is_set():
            return
        if self._state.session_id is None or parser.last_event_id is None:
            self._fail_local(request.id, ConnectionClosedError(
                f"the stream of {request.method} ended before its answer"))
            return
        backoff = Backoff()
        for _ in range(_MAX_RESUMES):
            delay = backoff.next_delay(parser.retry_ms)
            if delay >= deadline.remaining():
                return  # the caller stops waiting first: it reports the timeout
            if self._exchanges.pause(request.id, delay) or self._gave_up(request.id):
                return  # given up on, or the transport closed, meanwhile
            headers = {**self._session_headers(self._state.snapshot()),
                       "Accept": "text/event-stream", "Last-Event-ID": parser.last_event_id}
            try:
                resumed = self._http.get(self._post_url, headers=headers, stream=True,
                                         timeout=timeouts(deadline, self._connect_timeout,
                                                          self._read_timeout))
            except requests.RequestException as exc:
                logger.debug("resuming %s failed: %s", request.method, exc)
                continue
            if not self._table.opened(request.id, resumed):
                resumed.close()
                return
            with resumed:
                if resumed.status_code != 200:
                    break
                if self._read_sse(request, resumed, parser):
                    return
        self._fail_local(request.id, ConnectionClosedError(
            f"the stream of {request.method} broke and could not be resumed"))

    # -- the standalone GET stream and 2024-11-05 HTTP+SSE ------------------------------

    def _head_deadline(self, what: str) -> Deadline:
        """The bound on a long-lived stream's connect and head (not on its body, which
        lives as long as the session does)."""
        return Deadline(self._head_timeout, f"opening the {what}")

    def _keep_open(self, response: requests.Response) -> None:
        """Register the stream for close() to abort; abort it now if close() already
        swept (it would otherwise be read until its read timeout)."""
        self._table.hold(GET_KEY, response)
        if self._closed.is_set():
            abort(response)

    def _start_get_stream(self) -> None:
        snap = self._state.snapshot()
        with self._lock:
            running = self._get_thread is not None
            if not (snap.era == LEGACY_SSE or snap.session_id is None or running
                    or self._closed.is_set()):
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
        session = self._state.session_id
        parser = self._parser()
        backoff = Backoff()
        failures = 0
        while not self._closed.is_set() and failures < _MAX_RESUMES:
            snap = self._state.snapshot()
            if snap.session_id != session:  # re-initialized: the new session's stream
                session, parser, failures = snap.session_id, self._parser(), 0
                backoff.reset()
            headers = {**self._session_headers(snap), "Accept": "text/event-stream"}
            if parser.last_event_id:
                headers["Last-Event-ID"] = parser.last_event_id
            opened = time.monotonic()
            try:
                # A read timeout here too: a server that accepts the GET and never answers
                # would otherwise hold this thread past close(). A quiet healthy stream
                # is just reopened (with Last-Event-ID), at the base delay. Its head has a
                # deadline (a trickle of header lines resets every read timeout), and
                # close() ends it at once.
                with self._exchanges.running(GET_KEY, self._head_deadline("GET stream")):
                    response = self._http.get(self._post_url, headers=headers, stream=True,
                                              timeout=(self._connect_timeout,
                                                       self._read_timeout))
            except (requests.RequestException, OSError) as exc:  # DeadlineExceeded too
                failures += 1
                logger.debug("GET stream failed: %s", exc)
                self._get_ready.set()
            else:
                self._keep_open(response)
                self._get_ready.set()
                with response:
                    if response.status_code in (404, 405):
                        # No standalone stream here, or the session is gone. Decided under
                        # the lock that _start_get_stream takes, so that a re-initialize
                        # either finds this thread gone or is seen by it.
                        with self._lock:
                            if self._state.session_id == session:
                                self._get_thread = None
                                return
                        continue
                    if response.status_code != 200:
                        failures += 1
                    else:
                        failures = 0
                        before = parser.dispatched
                        try:
                            self._read_sse(None, response, parser)
                        except STREAM_ERRORS as exc:
                            logger.debug("GET stream broke: %s", exc)
                        lasted = time.monotonic() - opened
                        if parser.dispatched > before or lasted >= backoff.cap:
                            backoff.reset()  # a good stream: reconnect at the base delay
            if self._closed.wait(backoff.next_delay(parser.retry_ms)):
                return

    def _try_legacy_sse(self, request: Request) -> bool:
        """Try the 2024-11-05 transport: GET the URL, wait for the ``endpoint`` event."""
        try:
            # The one stream of the connection, read on a thread of its own: not a part of
            # this call's exchange (which ends when the call does). Its head has a deadline
            # of its own; close() ends it at once.
            with self._exchanges.running(GET_KEY, self._head_deadline("HTTP+SSE stream")):
                response = self._http.get(self.url, headers={**self._headers,
                                                             "Accept": "text/event-stream"},
                                          stream=True, timeout=(self._connect_timeout, None))
        except (requests.RequestException, OSError):  # DeadlineExceeded too
            return False
        if response.status_code != 200 or not response.headers.get(
                "Content-Type", "").startswith("text/event-stream"):
            response.close()
            return False
        self._state.set_era(LEGACY_SSE)
        self._keep_open(response)

        def read() -> None:
            with response:
                try:
                    self._read_sse(None, response)
                except STREAM_ERRORS as exc:
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
            response = self._post(request, self._state.snapshot())
            response.close()
        except requests.RequestException as exc:
            self._fail_local(request.id, local_error(
                exc, f"{request.method} to {self._post_url} failed"))
            self._forget(request.id)
