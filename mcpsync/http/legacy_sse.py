"""The 2024-11-05 HTTP+SSE transport, for old clients: ``GET {sse_path}`` opens a session
and its one stream, ``POST {messages_path}`` feeds it messages whose answers go on that
stream. Apart from the Streamable HTTP eras (``modern.py``, ``legacy.py``) because it has
its own endpoints and framing; the routing that picks it stays in ``wsgi.py``. Takes the
app's :class:`~mcpsync.http.services.Services`, as the other eras do.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qs

from ..protocol import jsonrpc
from ..protocol import sse as sse_codec
from .intake import transport_context
from .legacy import SESSION_NOT_FOUND
from .replies import Environ, StartResponse, _HttpError, sse_stream
from .services import Services


def open_stream(services: Services, environ: Environ, headers: dict[str, str],
                start_response: StartResponse) -> Iterable[bytes]:
    """``GET {sse_path}``: a new session whose stream first names its POST endpoint."""
    remote = environ.get("REMOTE_ADDR")
    session = services.sessions.create(legacy_sse=True, owner=services.gate.owner(),
                                  address=remote if isinstance(remote, str) else None)
    stream = session.open_standalone()
    assert stream is not None
    stream.attach()
    endpoint = (environ.get("SCRIPT_NAME", "") + services.messages_path
                + "?session_id=" + session.id)

    def on_close() -> None:
        stream.detach()
        services.sessions.remove(session.id, session.owner)

    items, done = stream.take(0.0)
    return sse_stream(services.pacing, start_response, stream, items, done, on_close,
                      prelude=sse_codec.encode_event(endpoint, event="endpoint"),
                      event_name="message")


def post(services: Services, environ: Environ, headers: dict[str, str],
         start_response: StartResponse) -> Iterable[bytes]:
    """``POST {messages_path}?session_id=…``: messages whose answers go on the stream."""
    query = parse_qs(environ.get("QUERY_STRING", ""))
    session_id = (query.get("session_id") or query.get("sessionId") or [""])[0]
    session = services.sessions.get(session_id, services.gate.owner())
    if session is None or not session.legacy_sse:
        raise _HttpError(SESSION_NOT_FOUND, "Session not found")
    items = jsonrpc.decode(services.body.read(environ))
    refusal = services.gate.scope_refusal(items)
    if refusal is not None:
        raise services.gate.refuse(refusal)
    transport = transport_context(environ, headers, session.id)
    for item in items:
        # An unreadable message too: the engine sends its error reply, through the
        # send middleware, on the stream (as on every other transport).
        session.feed(item, transport)
    start_response("202 Accepted", [("Content-Type", "text/plain"),
                                    ("Content-Length", "8")])
    return [b"Accepted"]
