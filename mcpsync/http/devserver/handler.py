"""One buffered request, answered on a handler thread: werkzeug's request parsing and WSGI
environ over bytes that have already arrived in full, and a response writer that knows
whether the connection can be kept for the next request.

Why not werkzeug's own ``run_wsgi``: it always closes the connection after one response
and then drains the socket, ten megabytes a read, to let a refused client see its answer;
here the body was read (or refused unread) before the handler ran, so there is nothing to
drain, and a keep-alive connection goes back to the reader instead.

Every line this handler logs goes through :func:`mcpsync.protocol.redact.redact`: a token in
the query string is refused by the app but would otherwise be printed in the access log.
"""

from __future__ import annotations

import io
import select
import socket
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from werkzeug.serving import WSGIRequestHandler

from ...protocol.deadline import Deadline
from ...protocol.redact import redact


class HandlerServer(Protocol):
    """What a handler reads of the server it answers for (the dev server is one): the app,
    the deadline of each write, and whether the server is closing. Declared here so that
    the handler does not import the server that imports it."""

    app: Callable[..., Any]
    connection_timeout: float
    closing: bool

_ERROR_BODY = b"Internal Server Error"


class _ClientGone(Exception):
    """Writing the response failed: the client left, or stopped reading for ``timeout``."""


class DeadlineWriter:
    """The response's way out: each :meth:`write` must be taken by the client within
    ``timeout`` seconds in all (one :class:`Deadline` per write, not per ``send``), else
    the connection ends.

    Why not ``socket.settimeout``: the socket stays in blocking mode with *no* timeout so
    that the app's check of whether the client left (a ``MSG_DONTWAIT`` peek, see
    ``replies._peer_gone``) returns at once. With a timeout set, Python waits for the
    socket to become readable before every ``recv``, flags or not: the peek waited the
    whole timeout and then reported a live client as gone, ending every call or stream
    quiet for longer than ``--timeout``.
    """

    closed = False

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self._sock = sock
        self._timeout = timeout

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        deadline = Deadline(self._timeout, "writing the response")
        while view:
            try:
                sent = self._sock.send(view, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                sent = 0
            view = view[sent:]
            if view and not _writable(self._sock, deadline):
                raise deadline.exceeded()
        return len(data)

    def flush(self) -> None:
        pass  # nothing is buffered


def _writable(sock: socket.socket, deadline: Deadline) -> bool:
    """Wait until ``sock`` can take more bytes; ``False`` once ``deadline`` has passed."""
    while not deadline.expired():
        if hasattr(select, "poll"):  # any descriptor number, unlike select()
            poller = select.poll()
            poller.register(sock, select.POLLOUT)
            if poller.poll(max(1, int(deadline.remaining() * 1000))):
                return True
        elif select.select([], [sock], [], deadline.remaining())[1]:
            return True
    return False


class BufferedRequestHandler(WSGIRequestHandler):
    """werkzeug's handler for one request whose bytes (head and body) are ``request``;
    the response goes to ``sock``. :meth:`answer` runs it and says whether the connection
    may serve another request.

    Not ``socketserver``'s life cycle: its constructor would read from the socket and close
    it. Here the reader owns the connection; this only answers one request on it.
    """

    protocol_version = "HTTP/1.1"
    server: HandlerServer  # type: ignore[assignment]

    def __init__(self, request: bytes, sock: socket.socket, client_address: Any,
                 server: HandlerServer) -> None:
        self.request = sock
        self.connection = sock
        self.client_address = client_address
        self.server = server
        self.rfile = io.BytesIO(request)
        self.wfile = DeadlineWriter(sock, server.connection_timeout)  # type: ignore[assignment]
        self.close_connection = True

    def answer(self) -> bool:
        """Answer the request; whether the connection can be kept for the next one."""
        try:
            self.handle_one_request()
        except (_ClientGone, OSError):
            return False
        return not self.close_connection

    def handle_expect_100(self) -> bool:
        return True  # the reader sent "100 Continue" before it read the body

    def run_wsgi(self) -> None:
        self.environ = environ = self.make_environ()
        response = _Response(self, environ["REQUEST_METHOD"] == "HEAD")
        try:
            body = self.server.app(environ, response.start_response)
            try:
                for data in body:
                    response.write(data)
                response.finish()
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()
        except _ClientGone:
            self.close_connection = True
        except Exception:
            self.close_connection = True
            self.log("error", "Error on request:\n%s", traceback.format_exc())
            if not response.started:
                try:
                    response.fail()
                except _ClientGone:
                    pass

    # -- logs: never a credential -------------------------------------------------------

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        line = getattr(self, "requestline", "")
        self.log("info", '"%s" %s %s', line.translate(self._control_char_table), code, size)

    def log(self, type: str, message: str, *args: Any) -> None:
        text = message % args if args else message
        super().log(type, "%s", redact(text))


class _Response:
    """The response of one request: status and headers when the first bytes go out, then
    the body framed by its ``Content-Length``, chunked (HTTP/1.1, no length: a stream), or
    ended by closing the connection (HTTP/1.0 without a length)."""

    def __init__(self, handler: BufferedRequestHandler, head_only: bool) -> None:
        self._handler = handler
        self._head_only = head_only
        self._status: str | None = None
        self._headers: list[tuple[str, str]] = []
        self.started = False
        self._chunked = False
        self._length: int | None = None
        self._written = 0

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info:
            try:
                if self.started:
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif self._status is not None:
            raise AssertionError("start_response called twice without exc_info")
        self._status = status
        self._headers = list(headers)
        return self.write

    def write(self, data: bytes) -> None:
        if not self.started:
            self._send_head()
        if not data or self._head_only:
            return
        if self._chunked:
            self._send(b"%x\r\n" % len(data) + data + b"\r\n")
        else:
            self._written += len(data)
            self._send(data)

    def finish(self) -> None:
        if not self.started:
            self._send_head()
        if self._chunked:
            self._send(b"0\r\n\r\n")
        elif self._length is not None and not self._head_only and self._written != self._length:
            self._handler.close_connection = True  # the framing is broken: end it here

    def fail(self) -> None:
        """A 500 in place of a response the application could not make."""
        self._status = "500 Internal Server Error"
        self._headers = [("Content-Type", "text/plain; charset=utf-8"),
                         ("Content-Length", str(len(_ERROR_BODY)))]
        self.write(_ERROR_BODY)
        self.finish()

    def _send_head(self) -> None:
        if self._status is None:
            raise AssertionError("the application wrote before start_response")
        handler = self._handler
        code_text, _, reason = self._status.partition(" ")
        code = int(code_text)
        handler.send_response(code, reason)  # logs the request line (redacted)
        names = set()
        for name, value in self._headers:
            handler.send_header(name, value)  # "Connection: close" sets close_connection
            names.add(name.lower())
        if "content-length" in names:
            for name, value in self._headers:
                if name.lower() == "content-length" and value.strip().isdigit():
                    self._length = int(value)
        elif not (self._head_only or 100 <= code < 200 or code in (204, 304)):
            if handler.request_version == "HTTP/1.1":
                self._chunked = True
                handler.send_header("Transfer-Encoding", "chunked")
            else:
                handler.close_connection = True  # the end of the body is the end of it
        if handler.server.closing:
            handler.close_connection = True
        if "connection" not in names:
            if handler.close_connection:
                handler.send_header("Connection", "close")
            elif handler.request_version != "HTTP/1.1":
                handler.send_header("Connection", "keep-alive")
        self.started = True
        try:
            handler.end_headers()
        except OSError as exc:
            raise _ClientGone() from exc

    def _send(self, data: bytes) -> None:
        try:
            self._handler.wfile.write(data)
        except OSError as exc:
            raise _ClientGone() from exc


__all__ = ["BufferedRequestHandler"]
