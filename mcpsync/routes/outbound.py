"""Where a generated tool's request goes: over HTTP with ``requests``
(:class:`RequestsCaller`), or into a WSGI application in this process
(:class:`WsgiCaller`).

Both read at most ``max_response_bytes`` of an answer and end by a deadline: the call's
``timeout``, or sooner the ambient deadline of the code around it
(:func:`mcpsync.protocol.deadline.current`). Cancelling the MCP request ends the HTTP
exchange at once on mcpsync's own session (its sockets are tracked and shut down); on a
session of the caller's, which mcpsync never changes (no adapter is mounted on it: its
auth, retries and proxies stay as they are), each read waits at most what is left of the
deadline, and a cancel shuts the answer down once its head has come: before that, the
socket is inside the caller's adapter, out of reach, and the wait ends by the deadline.

In process there is no socket to shut: the application's own code runs on the handler's
thread as any tool's code does, and the deadline is checked between the chunks of its
answer, and a streamed answer is closed (``close()``, as PEP 3333 asks) however the
reading ends.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import requests

from ..errors import MessageTooLargeError, RequestCancelledError
from ..protocol.deadline import Deadline, DeadlineExceeded, current
from ..transports.http.deadline import exchange, timeouts, tracked, tracked_session
from ..transports.http.io import abort, local_error, read_body
from .calls import HttpAnswer, HttpRequest

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext

__all__ = ["CallFailed", "Caller", "RequestsCaller", "WsgiCaller"]

#: Who the caller is, put into the WSGI environ: ``(ctx, environ) -> None``.
IdentityHook = Callable[["HandlerContext | None", dict[str, Any]], None]


class CallFailed(Exception):
    """No answer: the API could not be reached, took too long, or answered too much."""


class Caller(Protocol):
    def send(self, request: HttpRequest, ctx: HandlerContext | None,
             what: str) -> HttpAnswer: ...


def call_deadline(timeout: float | None, what: str) -> Deadline:
    """``timeout`` seconds from now, or the ambient deadline when that ends sooner."""
    mine = Deadline(timeout, what)
    outer = current()
    return mine if outer is None or mine.at <= outer.at else Deadline(
        outer.budget, outer.what, at=outer.at)


def on_cancel(ctx: HandlerContext | None, action: Callable[[], None]) -> None:
    """Run ``action`` when the request is cancelled (an event that can call back)."""
    cancelled = getattr(ctx, "cancelled", None)
    add = getattr(cancelled, "add_callback", None)
    if callable(add):
        add(action)


def _check_cancelled(ctx: HandlerContext | None) -> None:
    cancelled = getattr(ctx, "cancelled", None)
    if isinstance(cancelled, threading.Event) and cancelled.is_set():
        raise RequestCancelledError("the request was cancelled")


class RequestsCaller:
    """Calls ``base_url`` + the request's path with a ``requests.Session``."""

    def __init__(self, base_url: str, *, session: requests.Session | None, timeout: float,
                 max_response_bytes: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.own = session is None
        self.session = tracked_session() if session is None else session
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes

    def close(self) -> None:
        if self.own:
            self.session.close()

    def send(self, request: HttpRequest, ctx: HandlerContext | None,
             what: str) -> HttpAnswer:
        deadline = call_deadline(self.timeout, what)
        url = self.base_url + request.path
        headers = dict(request.headers)
        if request.content_type:
            headers["Content-Type"] = request.content_type
        headers.setdefault("Accept", "application/json, */*;q=0.5")
        reading: list[requests.Response] = []
        lock = threading.Lock()
        try:
            with exchange(deadline) as current_exchange:
                def cancel() -> None:
                    current_exchange.end("cancelled")
                    with lock:
                        responses = list(reading)
                    for response in responses:
                        if not tracked(response):
                            abort(response)

                on_cancel(ctx, cancel)
                _check_cancelled(ctx)
                deadline.check()
                connect, read = timeouts(deadline, self.timeout, self.timeout)
                with self.session.request(
                        request.method, url, params=request.query or None, headers=headers,
                        cookies=request.cookies or None, data=request.body, stream=True,
                        timeout=(connect, read)) as response:
                    with lock:
                        reading.append(response)
                    _check_cancelled(ctx)
                    body = read_body(response, self.max_response_bytes)
                    answer = HttpAnswer(response.status_code,
                                        {k.lower(): v for k, v in response.headers.items()},
                                        body)
        except requests.RequestException as exc:
            _check_cancelled(ctx)
            if deadline.expired():
                raise CallFailed(str(deadline.exceeded())) from None
            raise CallFailed(str(local_error(exc, f"{request.method} {url}"))) from None
        except DeadlineExceeded as exc:
            raise CallFailed(str(exc)) from None
        except MessageTooLargeError as exc:
            raise CallFailed(f"{what}: {exc} (max_response_bytes)") from None
        except OSError as exc:
            _check_cancelled(ctx)
            raise CallFailed(f"{what}: {exc}") from None
        _check_cancelled(ctx)
        return answer


class WsgiCaller:
    """Calls a WSGI application in this process: werkzeug builds the environ and runs it."""

    def __init__(self, app: Any, *, base_url: str, timeout: float, max_response_bytes: int,
                 identity: IdentityHook | None, prefix: str = "") -> None:
        self.app = app
        #: The path the document's server URL puts before every route (``/api/v1``).
        self.prefix = prefix
        self.base_url = base_url
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.identity = identity

    def send(self, request: HttpRequest, ctx: HandlerContext | None,
             what: str) -> HttpAnswer:
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        deadline = call_deadline(self.timeout, what)
        _check_cancelled(ctx)
        headers = dict(request.headers)
        if request.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in request.cookies.items())
        builder = EnvironBuilder(path=self.prefix + request.path, base_url=self.base_url,
                                 method=request.method,
                                 query_string=urllib.parse.urlencode(request.query),
                                 headers=list(headers.items()), data=request.body,
                                 content_type=request.content_type)
        try:
            environ = builder.get_environ()
        finally:
            builder.close()
        if self.identity is not None:
            self.identity(ctx, environ)
        app_iter, status, response_headers = run_wsgi_app(self.app, environ)
        try:
            body = _read_bounded(app_iter, self.max_response_bytes, deadline, ctx, what)
        finally:
            close = getattr(app_iter, "close", None)
            if close is not None:
                close()
        code = int(str(status).split(" ", 1)[0])
        return HttpAnswer(code, {k.lower(): v for k, v in response_headers.items()}, body)


def _read_bounded(chunks: Iterable[bytes], limit: int, deadline: Deadline,
                  ctx: HandlerContext | None, what: str) -> bytes:
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise CallFailed(f"{what}: the answer exceeds the {limit}-byte bound "
                             "(max_response_bytes)")
        if deadline.expired():
            raise CallFailed(str(deadline.exceeded()))
        _check_cancelled(ctx)
    return bytes(body)
