"""How the app answers an HTTP request: JSON-RPC error bodies and the status each one
gets, plain JSON, the choice between one JSON answer and an SSE stream, the SSE stream
writer itself, and the body object a WSGI server iterates.

Both eras and the 2024-11-05 transport answer through these, so they live apart from the
routing (``wsgi.py``) and from the era-specific handling (``modern.py``, ``legacy.py``,
``legacy_sse.py``). The functions that wait on a stream take the app's :class:`Pacing`:
its timing settings (``json_window``, ``keepalive_interval``, ``retry_ms``) and the check
of whether the client has left, which the app keeps per request thread.

**Statuses.** One table (:data:`STATUSES`) maps JSON-RPC error codes to HTTP statuses. A
POST whose whole answer is one JSON-RPC error gets the status this table gives for the
error's code, whoever made the error: the router refusing the request before any handler
(a body that is not JSON, a header that contradicts the body, an unknown session), or the
handler's own answer. Kept in one place so that the eras and the refusal paths can not
drift apart (they had three tables between them). The spec sets statuses for the
2026-07-28 envelope and header errors and for an unknown method; the handshake era sets
them for malformed requests and unknown sessions only; any other error is a JSON-RPC
error in the body of a successful exchange (200), as the official SDKs answer it. A
refusal that is about the HTTP exchange itself rather than its JSON-RPC content (a
forbidden ``Host``, a wrong ``Content-Type``, a body too large, a second GET stream) names
its own status (403, 415, 413, 409...): the code there is only the body's generic -32600.

**Response bodies.** The pieces of a response body that outlive the WSGI call: a body
whose ``close`` always runs its clean-up (:class:`_Body`, counted by
:data:`OPEN_STREAMS`), polling the check of whether the client has left while a stream
waits (which the intake found: ``intake.py`` :func:`~mcpsync.http.intake.peer_probe`).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, NamedTuple

from ..errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    RATE_LIMITED,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..protocol import jsonrpc
from ..protocol import sse as sse_codec
from ..protocol.jsonrpc import ErrorResponse, Message, RequestId, Response
from .streams import Item, ResponseStream

logger = logging.getLogger("mcpsync.http")

StartResponse = Callable[..., Any]
Environ = dict[str, Any]

# -- statuses -----------------------------------------------------------------------------

#: The code of a handshake-era request on a session this server does not hold (expired,
#: evicted, deleted, never made): with a 404 the client initializes again.
SESSION_NOT_FOUND: Final = -32001

OK: Final = "200 OK"
BAD_REQUEST: Final = "400 Bad Request"
NOT_FOUND: Final = "404 Not Found"
UNAVAILABLE: Final = "503 Service Unavailable"
TOO_MANY: Final = "429 Too Many Requests"


class Statuses(NamedTuple):
    """The statuses of one code: as a refusal made before any handler ran, as the
    answer of a 2026-07-28 request, as the answer of a handshake-era request."""

    refused: str
    modern: str
    handshake: str


#: code -> its statuses. A code not listed: 400 as a refusal, 200 as an answer.
STATUSES: Final[Mapping[int, Statuses]] = {
    PARSE_ERROR: Statuses(BAD_REQUEST, BAD_REQUEST, BAD_REQUEST),
    INVALID_REQUEST: Statuses(BAD_REQUEST, BAD_REQUEST, BAD_REQUEST),
    INVALID_PARAMS: Statuses(BAD_REQUEST, OK, OK),  # refused: the envelope's _meta
    METHOD_NOT_FOUND: Statuses(NOT_FOUND, NOT_FOUND, OK),
    HEADER_MISMATCH: Statuses(BAD_REQUEST, BAD_REQUEST, OK),
    MISSING_CLIENT_CAPABILITY: Statuses(BAD_REQUEST, BAD_REQUEST, OK),
    UNSUPPORTED_PROTOCOL_VERSION: Statuses(BAD_REQUEST, BAD_REQUEST, OK),
    SESSION_NOT_FOUND: Statuses(NOT_FOUND, OK, OK),  # a handler's -32001 is its own
    INTERNAL_ERROR: Statuses(UNAVAILABLE, OK, OK),  # refused: busy, store down, no answer
    RATE_LIMITED: Statuses(TOO_MANY, TOO_MANY, TOO_MANY),  # a guard's limit: Retry-After
}
_DEFAULT: Final = Statuses(BAD_REQUEST, OK, OK)


def refused_status(code: int) -> str:
    """The status of a request refused with ``code`` before any handler ran."""
    return STATUSES.get(code, _DEFAULT).refused


def answer_status(code: object, *, modern: bool) -> str:
    """The status of a POST answered with one error of ``code`` (by its handler, or by
    middleware) in 2026-07-28 (``modern``) or in the handshake era."""
    statuses = STATUSES.get(code, _DEFAULT) if isinstance(code, int) else _DEFAULT
    return statuses.modern if modern else statuses.handshake


# -- response bodies ----------------------------------------------------------------------

class OpenStreams:
    """How many SSE response bodies of this process are open now (made and not yet cleaned
    up), for the ``mcpsync.server.sse_streams.open`` gauge. Counted here because every
    SSE answer (a POST's stream, a standalone GET, a resume, a 2024-11-05 ``/sse``) is a
    :class:`_Body`, whose clean-up runs exactly once: the count cannot drift. Process-wide,
    not per app, since a body does not know its app. Thread-safe (one lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0

    def count(self) -> int:
        return self._open

    def add(self, delta: int) -> None:
        with self._lock:
            self._open += delta


#: The one count of this process's open SSE bodies.
OPEN_STREAMS: Final = OpenStreams()


class _Body:
    """A WSGI response body over a generator whose clean-up (``on_close``) runs exactly once:
    when the server calls :meth:`close`, when the generator is exhausted or fails, or when
    the server drops the body without closing it.

    PEP 3333 says the server calls ``close``, but servers skip it on some error paths:
    werkzeug's own server, draining the request after the last chunk, skips it when that
    read fails (a client that resets the connection as soon as it has read its answer).
    The clean-up is what lets go of a finished stream's stored events, ends a 2024-11-05
    session and cancels an abandoned 2026-07-28 call, so it must not depend on that.
    Not thread-safe: one server thread iterates and closes a body.
    """

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], None]) -> None:
        self._chunks = chunks
        self._on_close: Callable[[], None] | None = on_close
        OPEN_STREAMS.add(1)  # until _clean_up, which runs exactly once

    def __iter__(self) -> _Body:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._chunks)
        except BaseException:  # exhausted (StopIteration) or failed: nothing more comes
            self._clean_up()
            raise

    def close(self) -> None:
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._clean_up()

    def __del__(self) -> None:
        # Dropped without close (a server's error path): the generator's own finally
        # blocks run as it is collected; the clean-up must too. In CPython this runs on
        # the thread that dropped the last reference, the server's handler thread.
        if self._on_close is not None:
            try:
                self.close()
            except Exception:  # a finalizer must not raise: say it, go on
                logger.exception("closing a dropped response body failed")

    def _clean_up(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            OPEN_STREAMS.add(-1)
            on_close()


#: How often a quiet SSE stream looks at its client's socket (when the server exposes it).
_PEER_CHECK: Final = 0.5


def _has_answer(events: list[tuple[str, bytes]], request_id: object) -> bool:
    """Whether stored ``events`` include the response to ``request_id``."""
    for _, data in events:
        try:
            message = json.loads(data) if data else None
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == request_id and (
                "result" in message or "error" in message):
            return True
    return False


# -- answers ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pacing:
    """How one app paces an answer: how long a handler may take to answer with plain
    JSON (``json_window``), the seconds between keep-alive comments on a quiet SSE stream
    (``keepalive_interval``), the ``retry:`` advice to reconnecting clients
    (``retry_ms``), and ``peer()``: the request's check of whether its client has left
    (``None`` where the WSGI server does not let the app see it), read on the request's
    own thread."""

    json_window: float
    keepalive_interval: float
    retry_ms: int
    peer: Callable[[], Callable[[], bool] | None]

_SSE_HEADERS: Final = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                       ("X-Accel-Buffering", "no")]


class _HttpError(Exception):
    """A request refused before (or instead of) its handler: raised where the refusal is
    found, answered by the app through the server's send middleware
    (:meth:`~mcpsync.dispatch.inbound.InboundExecutor.reject`), as every other answer.
    ``status``: only for a refusal about the HTTP exchange itself (415, 413, 409...);
    otherwise the one table (:data:`STATUSES`) decides it from ``code``.
    ``extra``: response headers it needs (``Allow``, ``Retry-After``)."""

    def __init__(self, code: int, message: str, msg_id: Any = None, data: Any = None, *,
                 status: str | None = None,
                 extra: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status if status is not None else refused_status(code)
        self.code = code
        self.message = message
        self.msg_id = msg_id
        self.data = data
        self.extra = extra

    def error(self) -> dict[str, Any]:
        """The JSON-RPC error object of the refusal."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class _ClientGone(Exception):
    """The client closed its connection while its request was still running."""


#: A message as the bytes of a body or an event. Notifications and requests were checked
#: when they were sent (their sender got the error); an answer that cannot be encoded
#: becomes an encodable error for its id. (The function itself: no wrapper per answer.)
_encode: Callable[[Message], bytes] = jsonrpc.encode_answer


def json_reply(start_response: StartResponse, status: str, body: bytes,
               extra: list[tuple[str, str]] | None = None) -> list[bytes]:
    response_headers = [("Content-Type", "application/json"),
                        ("Content-Length", str(len(body)))]
    if extra:
        response_headers.extend(extra)
    start_response(status, response_headers)
    return [body]


def sse_stream(pacing: Pacing, start_response: StartResponse, stream: ResponseStream,
               first: list[Item], done: bool, on_close: Callable[[], None], *,
               prime_id: str | None = None, prelude: bytes = b"",
               extra: list[tuple[str, str]] | None = None, event_name: str | None = None,
               on_complete: Callable[[], None] | None = None,
               consumer: int | None = None) -> _Body:
    """The SSE response of ``stream``: ``prelude``, a priming event (``prime_id``), the
    items already taken (``first``), then the rest as they come, with keep-alive comments
    while it is quiet; ``on_close`` always runs when the server closes the body.
    ``consumer`` is this response's token from :meth:`ResponseStream.attach`: once another
    connection has taken the stream over, this one ends at once."""
    start_response("200 OK", _SSE_HEADERS + (extra or []))
    keepalive = pacing.keepalive_interval
    retry_ms = pacing.retry_ms
    peer = pacing.peer()
    tick = min(keepalive, _PEER_CHECK) if peer is not None else keepalive

    def chunks() -> Iterator[bytes]:
        head, tail = prelude, b""
        if prime_id is not None:
            priming = sse_codec.encode_event(b"", id=prime_id, retry_ms=retry_ms)
            # Events taken before the answer began were stored first: their ids come before
            # the priming event's. It goes after them, so that ids go out in order and a
            # client resuming from any event it read misses none that follow it.
            if any(message is not None for _, message in first):
                tail = priming
            else:
                head += priming
        items, over = first, done
        while True:
            chunk = head + b"".join(
                sse_codec.encode_event(_encode(message), id=event_id, event=event_name)
                for event_id, message in items if message is not None) + tail
            # The first chunk sends the headers: never hold it back; later, a quiet
            # interval gets a comment, which also finds out whether the client left.
            if over:
                if peer is not None and peer():
                    # The client left before its answer went out. A write would still
                    # succeed (into the closed socket's buffer) and count as delivered,
                    # dropping the stored events; kept, a resume replays them.
                    return
                try:
                    yield chunk or sse_codec.KEEPALIVE
                finally:
                    # Resumed, or closed, after the last yield: either way the server
                    # took the chunk and wrote it. Everything was taken, so a finished
                    # stream's final message went out (a client that closes as soon as
                    # it has read the answer must not leave the stream's events kept).
                    if stream.current(consumer):  # not if superseded: it took nothing
                        stream.delivered = stream.finished
                        if on_complete is not None:
                            on_complete()
                return
            yield chunk or sse_codec.KEEPALIVE
            head = tail = b""
            quiet = 0.0
            while True:
                items, over = stream.take(tick, consumer)
                if items or over:
                    break
                quiet += tick
                if peer is not None and peer():
                    return  # closing the body runs on_close: a cancellation in 2026-07-28
                if quiet >= keepalive:
                    break  # yield a keep-alive comment

    return _Body(chunks(), on_close)


#: What a request whose stream ended with no answer (its session ended, the send
#: middleware dropped the answer) is answered with, under its own id.
UNANSWERED: Final = "The request ended without an answer"


def _answers(stream: ResponseStream) -> RequestId | None:
    """The id of the request whose answer ``stream`` carries (``None``: not one request's)."""
    final_id = stream.final_id
    return final_id if isinstance(final_id, (str, int)) and not isinstance(
        final_id, bool) else None


def respond(pacing: Pacing, start_response: StartResponse, stream: ResponseStream,
            accepts: tuple[bool, bool], on_close: Callable[[], None] | None = None, *,
            modern: bool, cancel: threading.Event | None = None,
            prime: Callable[[], str | None] | None = None,
            extra: list[tuple[str, str]] | None = None,
            consumer: int | None = None) -> Iterable[bytes]:
    """JSON if the final response comes first and soon, else an SSE stream. ``modern``:
    the request is a 2026-07-28 one (the era decides the status of an error answer).
    ``accepts``: (JSON acceptable, SSE acceptable), as the intake read them. When the
    answer is done with the stream, ``on_close`` runs; without one, the stream is left
    (:meth:`ResponseStream.leave`), setting ``cancel`` if the answer had not come."""
    want_json, want_sse = accepts
    if want_json and consumer is None and on_close is None:
        # Answered before the response began (the usual case): the answer, as JSON, with
        # neither a wait nor a list of items; the stream is left as on_close would.
        settled = stream.settled_answer()
        if settled is not None:
            return json_response(start_response, settled, extra, modern=modern)
    if on_close is None:
        on_close = partial(stream.leave, cancel)
    if not want_sse:
        try:
            final = final_only(pacing, stream, pacing.peer(), consumer)
        except _ClientGone:
            on_close()  # as when a stream's client leaves: a cancellation in 2026-07-28
            raise _HttpError(INTERNAL_ERROR,
                             "The client closed the connection before the answer",
                             _answers(stream), status="499 Client Closed Request") from None
        if stream.current(consumer):
            stream.delivered = final is not None
        on_close()
        return json_response(start_response, final, extra, modern=modern,
                             request_id=_answers(stream))
    items, done = stream.take(pacing.json_window if want_json else 0.0, consumer)
    if want_json and done and len(items) == 1 and items[0][1] is not None and isinstance(
            items[0][1], (Response, ErrorResponse)):
        stream.delivered = True
        on_close()
        return json_response(start_response, items[0][1], extra, modern=modern)
    if done and not items and stream.disconnect_requested and prime is not None:
        # Closed before a word was sent: a priming event lets the client resume.
        return sse_stream(pacing, start_response, stream, [], True, on_close, prime_id=prime(),
                          extra=extra, consumer=consumer)
    if done and not items:
        on_close()
        raise _HttpError(INTERNAL_ERROR, UNANSWERED, _answers(stream))
    return sse_stream(pacing, start_response, stream, items, done, on_close,
                      prime_id=prime() if prime is not None else None, extra=extra,
                      consumer=consumer)


def final_only(pacing: Pacing, stream: ResponseStream,
               peer: Callable[[], bool] | None = None,
               consumer: int | None = None) -> Message | None:
    """Wait for the final answer only. With a check of the client (``peer``), raise
    :class:`_ClientGone` as soon as the client has closed its connection."""
    tick = min(pacing.keepalive_interval, _PEER_CHECK) if peer is not None else (
        pacing.keepalive_interval)
    while True:
        items, done = stream.take(tick, consumer)
        for _, message in items:
            if isinstance(message, (Response, ErrorResponse)):
                return message
        if done:
            return None
        if peer is not None and peer():
            raise _ClientGone()


def json_response(start_response: StartResponse, message: Message | None,
                  extra: list[tuple[str, str]] | None, *, modern: bool,
                  request_id: RequestId | None = None) -> list[bytes]:
    """``message`` (the request's answer, already through the send middleware) as the
    JSON body; an error answer's status from the one table (:data:`STATUSES`). No message:
    the request ``request_id`` ended without an answer, which is refused."""
    if message is None:
        raise _HttpError(INTERNAL_ERROR, UNANSWERED, request_id)
    status = "200 OK"
    if isinstance(message, ErrorResponse):
        status = answer_status(message.error.get("code"), modern=modern)
        if status == TOO_MANY:
            extra = [*(extra or ()), *_retry_after(message.error.get("data"))]
    return json_reply(start_response, status, _encode(message), extra)


def _retry_after(data: Any) -> list[tuple[str, str]]:
    """``Retry-After`` (whole seconds, rounded up) for a 429 whose error says
    ``data.retryAfter`` (seconds, as ``mcpsync.middleware``'s guards give it)."""
    wait = data.get("retryAfter") if isinstance(data, dict) else None
    if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait >= 0:
        return [("Retry-After", str(max(1, math.ceil(wait))))]
    return []


def method_not_allowed() -> _HttpError:
    """The refusal of an HTTP method the endpoint does not serve (to raise)."""
    return _HttpError(INVALID_REQUEST, "Method not allowed", status="405 Method Not Allowed",
                      extra=[("Allow", "POST")])


def refusal_reply(start_response: StartResponse, refusal: _HttpError,
                  answer: Message | None) -> list[bytes]:
    """Write ``refusal``: its status and headers, with ``answer`` (its JSON-RPC error as
    the send middleware left it) as the body. An HTTP request is always answered, so a
    refusal the middleware dropped goes out as the app made it (a middleware that drops
    every answer still lets its clients learn why their requests got none)."""
    if answer is None:
        answer = ErrorResponse(refusal.msg_id, refusal.error())
    return json_reply(start_response, refusal.status, _encode(answer), refusal.extra)
