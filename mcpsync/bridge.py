"""``mcpsync run URL``: a stdio server that is a remote Streamable HTTP server.

A host that only launches stdio servers (most desktop clients) gets an HTTP one this way:
every message read on stdin is sent to the URL, every message from there is written to
stdout. Messages are relayed as they are, not interpreted, so either era, the handshake's
session and the server's own requests (sampling, elicitation) pass through; the HTTP
transport does what HTTP needs (session id, protocol version header, SSE streams).

What only this process can see is turned into answers: a request the HTTP exchange failed
for (refused connection, silent server, oversized answer) is answered with a JSON-RPC
error to the stdio client, and a line on stdin that is not JSON-RPC gets the spec's error
reply, as any stdio server gives.

Each relayed request's exchange is bounded although the host's own timeout is unknown
here (MCP does not send it): the host's ``notifications/cancelled`` ends it at once (and
is passed on), and an answer that has not begun within ``head_timeout`` (``mcpsync run
URL --timeout``, default 80 s: connect, head, a JSON answer whole) ends it and is answered
with an error. An SSE answer that has begun streams on, as a long tool call does, until
its answer, the server ending it, or the host's cancel
(:mod:`mcpsync.transports.http.opening`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping

from .errors import INTERNAL_ERROR, ConnectionClosedError, TransportTimeoutError
from .protocol.jsonrpc import ErrorResponse, Invalid
from .server.signals import StopSignals
from .transports.base import CallFailed, Transport
from .transports.stream import StreamTransport

logger = logging.getLogger("mcpsync.bridge")

JOIN_TIMEOUT = 5.0


class Bridge:
    """Relays messages between ``local`` (the stdio client's side) and ``remote`` until
    either side ends, then closes both. Two named threads, joined by :meth:`close`."""

    def __init__(self, local: Transport, remote: Transport) -> None:
        self.local = local
        self.remote = remote
        self.ended = threading.Event()
        self._threads = [
            threading.Thread(target=self._pump_out, name="mcpsync-bridge-out", daemon=True),
            threading.Thread(target=self._pump_in, name="mcpsync-bridge-in", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _pump_out(self) -> None:
        """stdin -> HTTP."""
        try:
            while (item := self.local.receive()) is not None:
                if isinstance(item, Invalid):
                    if item.reply is not None:
                        self.local.send(item.reply)
                    continue
                if isinstance(item, CallFailed):
                    continue  # a stream transport does not make these
                self.remote.send(item)
        except ConnectionClosedError:
            pass
        except Exception:
            logger.exception("relaying to the HTTP server failed")
        finally:
            self.ended.set()

    def _pump_in(self) -> None:
        """HTTP -> stdout."""
        try:
            while (item := self.remote.receive()) is not None:
                if isinstance(item, CallFailed):
                    self.local.send(ErrorResponse(item.request_id, {
                        "code": INTERNAL_ERROR, "message": _failure(item.error)}))
                    continue
                if isinstance(item, Invalid):
                    if item.answer_to is not None:
                        self.local.send(ErrorResponse(item.answer_to, {
                            "code": INTERNAL_ERROR,
                            "message": f"unreadable answer from the HTTP server: "
                                       f"{item.reason}"}))
                    continue
                self.local.send(item)
        except ConnectionClosedError:
            pass
        except Exception:
            logger.exception("relaying from the HTTP server failed")
        finally:
            self.ended.set()

    def close(self) -> None:
        """Close both sides (the HTTP session is ended) and join the threads, bounded."""
        self.remote.close()
        self.local.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(JOIN_TIMEOUT)


def _failure(error: BaseException) -> str:
    """The host's error message for a request whose exchange failed here."""
    if isinstance(error, TransportTimeoutError):
        return f"the HTTP server did not answer in time: {error}"
    if isinstance(error, ConnectionClosedError):
        return f"the HTTP server could not be reached: {error}"
    return f"the HTTP exchange failed: {error}"


def run_bridge(url: str, *, headers: Mapping[str, str] | None = None,
               head_timeout: float | None = None) -> None:
    """Serve stdin/stdout as the HTTP server at ``url``; return at EOF on stdin, when the
    server ends the connection, or on SIGINT/SIGTERM, having ended the HTTP session.
    ``head_timeout``: the longest a relayed request's answer may take to begin, in all
    (default: the transport's, 80 s)."""
    from .transports.http.transport import HttpTransport

    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)  # whatever else prints to stdout must not corrupt the protocol stream
    sys.stdout = sys.stderr
    writer = os.fdopen(protocol_fd, "wb", buffering=0)
    bridge = Bridge(StreamTransport(0, writer),
                    HttpTransport(url, headers=headers, head_timeout=head_timeout))
    # SIGTERM (what a host or docker sends) ends the HTTP session as Ctrl-C and EOF do; it
    # used to kill the process on the spot, leaving the session open on the server.
    with StopSignals(honour_ignored=(signal.SIGINT,)) as signals:
        try:
            signals.run(bridge.ended.wait)
        finally:
            bridge.close()
