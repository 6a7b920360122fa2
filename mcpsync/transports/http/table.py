"""The HTTP client's table of its calls: :class:`CallTable`.

What the transport knows of each request it POSTed, by id, until the call ends (answered,
failed, or given up on: cancelled or timed out), when every entry of it is removed: its
method (to read its answer), whether it was given up on, whether (2024-11-05) its answer
is to come on the GET stream, whether its answer did not begin in time
(:mod:`~mcpsync.transports.http.opening`), and the response being read for it (to close it
early). One lock guards it all, held only for dict and set operations: never for I/O.

A part of :class:`~mcpsync.transports.http.transport.HttpTransport`, kept apart because every part
of the transport asks it: the POST, the SSE streams, the open requests. Thread-safe.
"""

from __future__ import annotations

import threading

import requests

from ...protocol.jsonrpc import RequestId

__all__ = ["CallTable"]


class CallTable:
    """The transport's calls in flight (see the module docstring). A key that is no
    request id (the GET stream's) may hold a response too."""

    __slots__ = ("_awaiting", "_cancelled", "_lock", "_methods", "_open", "_overdue")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[RequestId, requests.Response] = {}
        self._cancelled: set[RequestId] = set()
        self._methods: dict[RequestId, str] = {}
        self._awaiting: set[RequestId] = set()  # 2024-11-05: answered on the GET stream
        #: Requests whose answer did not begin in time, to be reported once their exchange
        #: is over (see opening.py).
        self._overdue: set[RequestId] = set()

    # -- a call's life -------------------------------------------------------------------

    def begin(self, request_id: RequestId, method: str) -> None:
        """A request is about to be POSTed."""
        with self._lock:
            self._methods[request_id] = method

    def opened(self, request_id: RequestId, response: requests.Response) -> bool:
        """``response`` is being read for ``request_id``; False (and not kept) when the
        call was given up on meanwhile: its reader closes it."""
        with self._lock:
            if request_id in self._cancelled:
                return False
            self._open[request_id] = response
            return True

    def hold(self, key: RequestId, response: requests.Response) -> None:
        """Keep a long-lived stream's ``response`` (the GET stream's) for :meth:`sweep`."""
        with self._lock:
            self._open[key] = response

    def read(self, request_id: RequestId, response: requests.Response) -> None:
        """``response`` has been read (and is closed by its reader): forget it, unless
        another response replaced it."""
        with self._lock:
            if self._open.get(request_id) is response:
                del self._open[request_id]

    def answered(self, request_id: RequestId) -> str | None:
        """The answer to ``request_id`` arrived: the call ends; its method, if ours."""
        with self._lock:
            method = self._methods.pop(request_id, None)
            self._cancelled.discard(request_id)
            self._awaiting.discard(request_id)
        return method

    def to_await(self, request_id: RequestId) -> bool:
        """The POST is over and (2024-11-05) its answer is to come on the GET stream:
        keep the call, unless it was answered or given up on meanwhile (False)."""
        with self._lock:
            keep = request_id in self._methods and request_id not in self._cancelled
            if keep:
                self._awaiting.add(request_id)
        return keep

    def forget(self, request_id: RequestId) -> None:
        """The call ended: remove every entry of it."""
        with self._lock:
            self._methods.pop(request_id, None)
            self._cancelled.discard(request_id)
            self._awaiting.discard(request_id)
            self._open.pop(request_id, None)

    # -- giving up -----------------------------------------------------------------------

    def cancelled(self, request_id: RequestId) -> bool:
        """Whether ``request_id`` was given up on (cancelled, abandoned, or overdue)."""
        with self._lock:
            return request_id in self._cancelled

    def cancel(self, key: RequestId) -> tuple[requests.Response | None, bool]:
        """Give up on ``key``: returns the response being read for it (now removed), and
        whether it is a call of ours (whose exchange is queued or running)."""
        with self._lock:
            response = self._open.pop(key, None)
            ours = key in self._methods
            if key in self._awaiting:
                # 2024-11-05: its answer would come on the GET stream; nobody waits now.
                self._awaiting.discard(key)
                self._methods.pop(key, None)
            elif ours:
                self._cancelled.add(key)  # its exchange is queued or running
        return response, ours

    def mark_overdue(self, request_id: RequestId) -> bool:
        """Its answer did not begin in time: give ``request_id`` up as overdue (True: its
        exchange is to be ended), unless it was answered, given up on, is to come on the
        GET stream, or its answer has begun as an SSE stream (False)."""
        with self._lock:
            if (request_id not in self._methods or request_id in self._cancelled
                    or request_id in self._awaiting):
                return False  # answered or failed, cancelled, or to come on the GET stream
            response = self._open.get(request_id)
            if response is not None and response.headers.get(
                    "Content-Type", "").lower().startswith("text/event-stream"):
                return False  # its answer has begun: a stream lives on
            # Given up on, as a cancel does, so the exchange reports nothing of its own
            # (it fails as its socket is shut): the overdue report is the one outcome.
            self._cancelled.add(request_id)
            self._overdue.add(request_id)
        return True

    def take_overdue(self, request_id: RequestId) -> bool:
        """Whether ``request_id`` was marked overdue (the mark is removed)."""
        with self._lock:
            overdue = request_id in self._overdue
            self._overdue.discard(request_id)
        return overdue

    # -- the transport's close -----------------------------------------------------------

    def sweep(self) -> list[tuple[RequestId, requests.Response]]:
        """Remove and return every response being read."""
        with self._lock:
            responses = list(self._open.items())
            self._open.clear()
        return responses

    def clear(self) -> None:
        """Forget every call (their exchanges have ended)."""
        with self._lock:
            self._methods.clear()
            self._cancelled.clear()
            self._awaiting.clear()
