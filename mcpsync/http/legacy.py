"""The handshake era on HTTP (2025-03-26 … 2025-11-25): a session's POST, GET and DELETE.

``initialize`` mints an ``Mcp-Session-Id``; later POSTs feed the session's messages (one or
a 2025-03-26 batch), GET opens the session's standalone stream or resumes one of its
streams from the event store (``Last-Event-ID``), DELETE ends the session. These take the
app's :class:`~mcpsync.http.services.Services` for its sessions, event store and inbound
path; the routing that picks them stays in ``wsgi.py`` and the way an answer is written
(JSON or SSE) is in ``replies.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from functools import partial

from ..errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, StoreUnavailableError
from ..protocol import sse as sse_codec
from ..protocol.jsonrpc import Invalid, Message, Request, Response
from ..protocol.methods import VIEWS
from ..protocol.versions import META_VERSION, features
from .intake import DELETE, GET, HttpRequest
from .replies import SESSION_NOT_FOUND as SESSION_NOT_FOUND
from .replies import (
    StartResponse,
    _encode,
    _has_answer,
    _HttpError,
    final_only,
    json_reply,
    json_response,
    method_not_allowed,
    respond,
    sse_stream,
)
from .services import Services
from .session_table import RETRY_AFTER, SessionTableFull
from .sessions import HttpSession
from .streams import ResponseStream, _seq


class _MethodNotAllowed(Exception):
    pass


def serve(services: Services, request: HttpRequest,
          start_response: StartResponse) -> Iterable[bytes]:
    """Serve one handshake-era request of the endpoint (the app's intake has read and
    checked it): ``initialize``, a session's POST, its GET stream, its DELETE."""
    if request.route == GET:
        return get(services, request, start_response)
    if request.route == DELETE:
        return delete(services, request, start_response)
    items = request.items
    first = items[0]
    if not services.legacy_sessions:
        raise _HttpError(INVALID_PARAMS,
                         "Invalid params: this server speaks 2026-07-28 only; put "
                         f"{META_VERSION!r} in the request's _meta",
                         getattr(first, "id", None))
    session_id = request.headers.get("mcp-session-id")
    if session_id:
        session = services.sessions.get(session_id, request.owner)
        if session is None:
            raise _HttpError(SESSION_NOT_FOUND, "Session not found",
                             getattr(first, "id", None))
        return post(services, session, request, start_response)
    if not request.batch and isinstance(first, Request) and first.method == "initialize":
        return initialize(services, first, request, start_response)
    if request.batch and any(isinstance(i, Request) and i.method == "initialize"
                             for i in items):
        raise _HttpError(INVALID_REQUEST,
                         "Invalid request: initialize cannot be batched")
    raise _HttpError(INVALID_REQUEST,
                     "Bad request: no Mcp-Session-Id header (send initialize first), and "
                     f"no {META_VERSION!r} in _meta (2026-07-28)",
                     getattr(first, "id", None))


def initialize(services: Services, message: Request, request: HttpRequest,
               start_response: StartResponse) -> Iterable[bytes]:
    """An ``initialize`` without a session: mint one, answer with its ``Mcp-Session-Id``."""
    remote = request.environ.get("REMOTE_ADDR")
    try:
        session = services.sessions.create(owner=request.owner,
                                      address=remote if isinstance(remote, str) else None)
    except SessionTableFull as exc:
        raise _HttpError(INTERNAL_ERROR, f"Too many sessions: {exc}", message.id,
                         extra=[("Retry-After", str(RETRY_AFTER))]) from None
    try:
        return _initialize(services, session, message, request, start_response)
    finally:
        session.leave()


def _initialize(services: Services, session: HttpSession, message: Request,
                request: HttpRequest, start_response: StartResponse) -> Iterable[bytes]:
    stream = session.open_stream(message.id)
    assert stream is not None
    stream.attach()
    assert request.transport is not None
    session.feed(message, request.transport.for_session(session.id))
    final = final_only(services.pacing, stream)
    stream.detach()
    stream.delivered = final is not None
    session.release(stream)
    if not isinstance(final, Response):
        services.sessions.remove(session.id, session.owner)
        return json_response(start_response, final, None, modern=False,
                             request_id=message.id)
    version = session.protocol_version
    session.priming = (services.store is not None and version is not None
                       and features(version).sse_polling)
    try:
        services.sessions.initialized(session)
    except StoreUnavailableError:
        services.sessions.remove(session.id, session.owner)  # answered 503: no session here
        raise
    return json_reply(start_response, "200 OK", _encode(final),
                      [("Mcp-Session-Id", session.id)])


def post(services: Services, session: HttpSession, request: HttpRequest,
         start_response: StartResponse) -> Iterable[bytes]:
    """A POST to an existing session: one message or a batch (2025-03-26 only)."""
    if not session.claim():  # ended, or evicted, since it was looked up
        raise _HttpError(SESSION_NOT_FOUND, "Session not found")
    try:
        return _post(services, session, request, start_response)
    finally:
        session.leave()  # its streams, if any, keep it busy from here


def _post(services: Services, session: HttpSession, request: HttpRequest,
          start_response: StartResponse) -> Iterable[bytes]:
    items, batch = request.items, request.batch
    version = request.headers.get("mcp-protocol-version")
    if version is not None and version not in services.server.protocol.legacy_versions:
        raise _HttpError(INVALID_REQUEST,
                         f"Bad request: unsupported MCP-Protocol-Version {version!r}")
    if batch and not (session.protocol_version
                      and features(session.protocol_version).batching):
        raise _HttpError(INVALID_REQUEST,
                         "Invalid request: batches are only allowed in 2025-03-26")
    replies: list[Message] = []
    streams: list[tuple[ResponseStream, int]] = []  # with each one's consumer token
    transport = request.transport  # with the session's id (see HttpRequest.transport)
    assert transport is not None
    for item in items:
        if isinstance(item, Invalid):
            if item.reply is not None:  # answered in this POST's body, as sent
                services.executor().reject(item.reply.id, item.reply.error, transport,
                                           replies.append)
            continue
        if isinstance(item, Request):
            stream = session.open_stream(item.id)
            if stream is None:
                # Refused here, not by the engine (whose answer would go to the stream
                # the id's first request holds): through the send middleware all the same.
                services.executor().reject(item.id, {
                    "code": INVALID_REQUEST,
                    "message": f"Invalid request: id {item.id!r} is already in flight"},
                    transport.for_message(item), replies.append)
                continue
            streams.append((stream, stream.attach()))
            if not batch and _inline_here(services, session, item):
                began = time.monotonic()
                with services.pool.inline_next():
                    session.feed(item, transport)
                if time.monotonic() - began > services.pacing.json_window / 2:
                    # Near the JSON window: from now on this tool runs on the pool, so
                    # that a slow call is upgraded to a (resumable) SSE stream in time.
                    services.slow_tools.add(str((item.params or {}).get("name")))
                continue
        session.feed(item, transport)
    if not streams and not replies:
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]
    if batch or not streams:
        for stream, token in streams:
            final = final_only(services.pacing, stream, consumer=token)
            if stream.detach(token):
                stream.delivered = final is not None
                session.release(stream)
            if final is not None:
                replies.append(final)
        if not batch:  # one answer: an error's status from the one table, as elsewhere
            return json_response(start_response, replies[0], None, modern=False)
        return json_reply(start_response, "200 OK",
                          b"[" + b",".join(_encode(m) for m in replies) + b"]")
    stream, token = streams[0]
    # A dropped handshake-era stream is not a cancellation; one a resume took over is
    # the resume's to release.
    return respond(services.pacing, start_response, stream, request.accepts,
                   partial(session.done_with, stream, token), modern=False,
                   prime=(lambda: session.prime(stream)) if session.priming else None,
                   consumer=token)


def _session_for(services: Services, request: HttpRequest) -> HttpSession:
    session_id = request.headers.get("mcp-session-id")
    if not session_id or not services.legacy_sessions:
        raise _MethodNotAllowed()
    session = services.sessions.get(session_id, request.owner)
    if session is None or not session.claim():  # (ended or evicted since the lookup)
        raise _HttpError(SESSION_NOT_FOUND, "Session not found")
    return session


def get(services: Services, request: HttpRequest,
        start_response: StartResponse) -> Iterable[bytes]:
    """A GET: the session's standalone stream, or the resumption of one of its streams."""
    try:
        session = _session_for(services, request)
    except _MethodNotAllowed:
        raise method_not_allowed() from None
    try:
        return _get(services, session, request, start_response)
    finally:
        session.leave()  # an attached stream keeps it busy from here


def _get(services: Services, session: HttpSession, request: HttpRequest,
         start_response: StartResponse) -> Iterable[bytes]:
    headers = request.headers
    if not request.accepts[1]:
        raise _HttpError(INVALID_REQUEST,
                         "Not acceptable: a GET stream needs Accept: text/event-stream",
                         status="406 Not Acceptable")
    session.touch()
    last = headers.get("last-event-id")
    if last and services.store is not None:
        found = services.store.events_after(last)
        # Only this session's own streams: an id of another session's stream is
        # treated as unknown (a fresh GET stream, nothing replayed).
        if found is not None and session.owns(found[0]):
            return _resume(services, session, found, last, start_response)
    stream = session.open_standalone()
    if stream is None:
        raise _HttpError(INVALID_REQUEST,
                         "Conflict: this session already has a GET stream", status="409 Conflict")
    token = stream.attach()

    def on_close() -> None:
        if stream.detach(token):
            session.close_standalone(stream)

    items, done = stream.take(0.0, token)
    # With a relay, what waited in the store comes first with its own ids: a priming
    # event (stored after them) would make a client that drops at once resume past them.
    prime = session.priming and not (session.relay is not None and items)
    return sse_stream(services.pacing, start_response, stream, items, done, on_close,
                      prime_id=session.prime(stream) if prime else None,
                      consumer=token)


def _resume(services: Services, session: HttpSession, found: tuple[str, list[tuple[str, bytes]]],
            last: str, start_response: StartResponse) -> Iterable[bytes]:
    """Replay a stream's events after ``last`` and, if it is still live, carry on with it.

    A live stream that another connection still holds is taken over, not refused: the
    client resuming has given that connection up even if the server has not noticed yet
    (a half-open connection, a proxy, a client read timeout). The events are read from
    the store only after taking over, so whatever the old connection took is replayed."""
    key, events = found
    if session.relay is not None:
        if key == session.standalone_key:
            followed = session.follow_standalone(last)
            assert followed is not None
            return _follow(services, session, followed, start_response)
        local = session.stream_by_key(key)
        if (local is None or local.follower is not None) and not _has_any_answer(events):
            # Its request runs on another worker (or ran here and a follower of ours
            # lost its client): follow its key until the answer.
            return _follow(services, session, session.follow_stream(key, last), start_response)
    live = session.stream_by_key(key)
    if live is not None and live.follower is not None:
        live = None  # a follower of ours whose answer is stored: replay it, as below
    token: int | None = None
    if live is not None and live.final_id is not None and _has_answer(events, live.final_id):
        live = None  # the replay carries the final answer: the stream is over for us
    if live is not None:
        if live.final_id is None and not session.resume_standalone(live):
            raise _HttpError(INVALID_REQUEST,
                             "Conflict: this session already has a GET stream",
                             status="409 Conflict")
        token = live.attach()
        if session.relay is not None:  # a follower elsewhere lets go of it
            session.relay.takeover(session.id, key)
        again = services.store.events_after(last) if services.store is not None else None
        if again is not None and again[0] == key:
            events = again[1]
    skip = max([_seq(last)] + [_seq(event_id) for event_id, _ in events])
    replay = b"".join(sse_codec.encode_event(data, id=event_id)
                      for event_id, data in events if data)
    on_complete: Callable[[], None] | None = None
    if live is None:  # that stream is over: replay what was kept, then end
        stream = ResponseStream()
        stream.end()

        def on_complete() -> None:
            # The replay, final answer included, went out whole: no resume needs it.
            session.forget_finished(key)
    else:
        stream = live
        stream.skip_through(skip)

    def on_close() -> None:
        if not stream.detach(token) or live is None:
            return  # taken over by a later resume: it is that one's to release
        session.release(live)
        if live.final_id is None:
            session.close_standalone(live)

    items, done = stream.take(0.0, token)
    return sse_stream(services.pacing, start_response, stream, items, done, on_close,
                      prelude=replay, on_complete=on_complete, consumer=token)


def _follow(services: Services, session: HttpSession, stream: ResponseStream,
            start_response: StartResponse) -> Iterable[bytes]:
    """Relay: serve a stream filled from the event store (see :mod:`mcpsync.http.relay`)."""
    token = stream.attach()
    key = stream.key

    def on_close() -> None:
        if not stream.detach(token):
            return  # taken over by a later resume: it is that one's to release
        session.release(stream)
        if stream.final_id is None:
            session.close_standalone(stream)

    def on_complete() -> None:
        if stream.final_id is not None and key is not None:
            session.forget_finished(key)  # the answer went out whole

    items, done = stream.take(0.0, token)
    return sse_stream(services.pacing, start_response, stream, items, done, on_close,
                      on_complete=on_complete, consumer=token)


def _has_any_answer(events: list[tuple[str, bytes]]) -> bool:
    """Whether stored POST-stream ``events`` include its answer (a POST stream carries
    no other response than its request's)."""
    for _, data in events:
        if data and (b'"result"' in data or b'"error"' in data):
            try:
                message = json.loads(data)
            except ValueError:
                continue
            if isinstance(message, dict) and "id" in message and "method" not in message:
                return True
    return False


def delete(services: Services, request: HttpRequest,
           start_response: StartResponse) -> Iterable[bytes]:
    """A DELETE: the client ends its session."""
    session_id = request.headers.get("mcp-session-id")
    if not session_id or not services.legacy_sessions:
        raise method_not_allowed()
    if not services.sessions.remove(session_id, request.owner):
        raise _HttpError(SESSION_NOT_FOUND, "Session not found")
    start_response("200 OK", [("Content-Length", "0")])
    return [b""]


def _inline_here(services: Services, session: HttpSession, request: Request) -> bool:
    """Whether the handler of ``request`` may run on this POST's thread rather than on
    the pool: a tool without a context parameter (as in 2026-07-28, ``modern.py``), on a
    session of this worker whose engine runs no receive middleware (a handler never runs
    inside it), unless one of its calls here took over half the JSON window (a call
    slower than the window is answered on an SSE stream, with its priming event)."""
    if request.method not in VIEWS.tool_methods or services.relay is not None:
        return False
    name = str((request.params or {}).get("name"))
    tool = services.server.tools.get(name)
    if tool is None or not tool.context_free or name in services.slow_tools:
        return False
    executor = getattr(session.server_session.connection, "_executor", None)
    return executor is not None and not executor.has_receive_middleware

