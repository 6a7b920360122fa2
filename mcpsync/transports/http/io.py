"""The byte-level side of the HTTP client: bounded reads, local-error mapping, reconnect
backoff, and aborting a response another thread reads.

Everything here guards the client against the server: an answer is read in chunks and
given up on past ``max_message_bytes`` (never loaded whole first), a failure to reach or
read the server becomes a :class:`~mcpsync.errors.TransportError` (never an ``MCPError``,
which means *the server said so*), and reconnecting to a stream that keeps ending waits
longer each time.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Final

import requests
import urllib3

from ...errors import (
    ConnectionClosedError,
    MessageTooLargeError,
    TransportError,
    TransportTimeoutError,
)
from ...protocol.decoding import DEFAULT_MAX_LINE_BYTES, parse_decimal
from ...protocol.redact import redact
from ...protocol.sse import EventTooLarge
from .deadline import tracked_session

#: The bound on one HTTP answer (a JSON body, or one SSE event): the same as a stdio line.
DEFAULT_MAX_MESSAGE_BYTES: Final = DEFAULT_MAX_LINE_BYTES
#: How much of a refusal's body (an HTTP error page) is read to quote it.
ERROR_BODY_BYTES: Final = 64 * 1024
#: Reconnecting a stream: never sooner than the floor, whatever ``retry:`` says; doubling
#: after each stream that brought nothing, up to the cap; back to the floor after a good one.
RECONNECT_FLOOR: Final = 0.5
RECONNECT_CAP: Final = 30.0
_DEFAULT_RETRY: Final = 1.0  # seconds, when the server sent no ``retry:``

#: What reading a response can raise, including when another thread closes it (which is
#: how a cancelled request's stream is dropped). Reading ``response.raw`` directly raises
#: urllib3's own errors (a broken chunked stream: ``ProtocolError``), not requests' ones.
STREAM_ERRORS: Final = (requests.RequestException, urllib3.exceptions.HTTPError, OSError,
                        ValueError, AttributeError)


def local_error(exc: BaseException, what: str) -> TransportError:
    """The :class:`TransportError` for a failure to reach the server or read its answer.
    Its message never quotes a credential: an endpoint URL with ``?api_key=`` in it (in
    ``what``, or in the library's own text of ``exc``) is redacted."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, EventTooLarge):
        return MessageTooLargeError(redact(f"{what}: {exc}"))
    if _is_timeout(exc):
        return TransportTimeoutError(
            redact(f"{what}: the server sent nothing in time ({exc})"))
    if isinstance(exc, (requests.ConnectionError, urllib3.exceptions.ProtocolError,
                        ConnectionError)):
        reason = _no_connection(exc)
        if reason is not None:
            url = getattr(getattr(exc, "request", None), "url", None) or ""
            # Redacted apart: the redaction of "?api_key=..." runs to the next space.
            where = f"cannot connect to {redact(str(url))}" if url else redact(what)
            return ConnectionClosedError(f"{where}: {reason}")
        return ConnectionClosedError(redact(f"{what}: {exc}"))
    return TransportError(redact(f"{what}: {exc}"))


def _no_connection(exc: BaseException) -> str | None:
    """Why no connection could be made, in a person's words ("connection refused"), when
    that is what ``exc`` says somewhere in its chain (requests wraps urllib3's retry error,
    which wraps the failed connection, which wraps the OSError); else None."""
    chain: list[object] = [exc]
    seen: set[int] = set()
    connecting = False
    while chain:
        error = chain.pop()
        if not isinstance(error, BaseException) or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, urllib3.exceptions.NameResolutionError | socket.gaierror):
            return "the host name could not be resolved"
        if isinstance(error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(error, urllib3.exceptions.NewConnectionError):
            connecting = True
        elif connecting and isinstance(error, OSError) and error.strerror:
            return error.strerror[:1].lower() + error.strerror[1:]  # "network is unreachable"
        chain.extend([getattr(error, "reason", None), error.__cause__, error.__context__,
                      *error.args])
    return "the connection failed" if connecting else None


def _is_timeout(exc: BaseException) -> bool:
    timeouts = (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)
    # requests reports a read timeout in the middle of a body as a ConnectionError
    # wrapping urllib3's ReadTimeoutError.
    inner = exc.args[0] if exc.args else None
    return isinstance(exc, timeouts) or isinstance(inner, timeouts)


def read_body(response: requests.Response, limit: int) -> bytes:
    """The (decoded) body, read in chunks; :class:`MessageTooLargeError` past ``limit``
    bytes, which is raised before more than ``limit`` + one chunk is held."""
    declared = parse_decimal(response.headers.get("Content-Length", "").strip())
    if declared is not None and declared > limit:
        raise MessageTooLargeError(
            f"the server's answer is {declared} bytes, over the {limit}-byte bound")
    body = bytearray()
    for chunk in response.iter_content(65536):
        body += chunk
        if len(body) > limit:
            raise MessageTooLargeError(f"the server's answer exceeds the {limit}-byte bound")
    return bytes(body)


def read_some(response: requests.Response, limit: int = ERROR_BODY_BYTES) -> str:
    """At most ``limit`` bytes of the body as text (to quote a refusal): never the whole of
    a body that may be huge."""
    body = bytearray()
    try:
        for chunk in response.iter_content(65536):
            body += chunk
            if len(body) >= limit:
                break
    except STREAM_ERRORS:
        pass
    return bytes(body[:limit]).decode(response.encoding or "utf-8", errors="replace")


def chunks(response: requests.Response) -> Iterator[bytes]:
    """The raw body as it arrives (for SSE: whatever the socket has, up to 64 KiB)."""
    raw = response.raw
    while True:
        chunk = raw.read1(65536) if hasattr(raw, "read1") else raw.read(65536)
        if not chunk:
            return
        yield chunk


class Backoff:
    """Delays between reconnections of one stream. Not thread-safe (one per stream)."""

    def __init__(self, floor: float = RECONNECT_FLOOR, cap: float = RECONNECT_CAP) -> None:
        self.floor = floor
        self.cap = cap
        self.attempt = 0

    def next_delay(self, retry_ms: int | None) -> float:
        """The wait before the next attempt: the server's ``retry:`` (or 1 s), at least the
        floor, doubled for each attempt since the last good stream, at most the cap."""
        base = retry_ms / 1000.0 if retry_ms is not None else _DEFAULT_RETRY
        delay: float = min(self.cap, max(self.floor, base) * float(1 << min(self.attempt, 16)))
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """A stream delivered something: the next reconnection waits the base delay."""
        self.attempt = 0


def own_session(url: str, pool_size: int) -> requests.Session:
    """A session for this endpoint. The environment's proxy and CA-bundle settings are read
    once, here: requests would otherwise rescan ``os.environ`` on every request, which
    costs about a millisecond per call. Its adapter tracks connections, so that a call's
    exchange ends by its deadline or when the call is given up on (:mod:`.deadline`)."""
    session = tracked_session(pool_connections=4, pool_maxsize=pool_size)
    session.proxies.update(requests.utils.get_environ_proxies(url))
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    session.trust_env = False
    return session


def abort(response: requests.Response) -> None:
    """End a response that another thread is reading: its socket is shut down, so a
    blocked read returns at once (``close()`` would wait for the reader: it needs the
    buffered reader's lock) and the reader, which always closes what it reads, gives the
    connection back. Not closed here: urllib3's ``release_conn`` is a check then a put, so
    closing it from two threads can pool its connection twice, and two later requests
    would share it (``CannotSendRequest('Request-sent')``). For a response of a tracked
    session, ending its exchange is the safe way (:func:`.deadline.tracked`): this reads
    the connection without a lock, and could shut one the reader has just given back."""
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
