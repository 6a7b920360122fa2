"""Calls a :class:`~mcpsync.Client` makes on behalf of another request, cancellable from
any thread.

A ``Client`` cancels a call of its own accord only on its deadline or Ctrl-C. Code that
forwards a request it was sent (a proxy) must also cancel the forwarded call when its own
caller cancels, and hears of that on some other thread. A :class:`CallTracker`, installed
as one of the client's send middleware, notes the id of every request a thread sends while
that thread is inside :meth:`CallTracker.tracking` (a call, its 2026-07-28 retries, the
pages of a list); :meth:`TrackedCall.cancel` cancels those still waiting: each waiting
call raises :class:`~mcpsync.errors.RequestCancelledError` and the server is sent
``notifications/cancelled``. A request the thread sends after the cancel is not sent at
all, and fails the same way.

Here, in the client package, because it cancels through the client
(:meth:`Client.cancel_request <mcpsync.Client.cancel_request>`); typed by what it needs
(:class:`CancelsRequests`), so it never imports the client.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

from ..protocol.jsonrpc import Message, Request, RequestId


class CancelsRequests(Protocol):
    """What tracking needs of a client: to cancel one of its requests by id."""

    def cancel_request(self, request_id: RequestId, reason: str) -> bool: ...


class TrackedCall:
    """The requests one thread sent for one call, and the means to cancel them.
    Thread-safe: :meth:`cancel` is meant for another thread."""

    def __init__(self, client: CancelsRequests) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._ids: list[RequestId] = []
        self._reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    def cancel(self, reason: str) -> None:
        """Cancel every request of this call still waiting for its answer (idempotent)."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            ids, self._ids = self._ids, []
        for request_id in ids:
            self._client.cancel_request(request_id, reason)

    def _sent(self, request_id: RequestId) -> bool:
        """Note a request about to be sent; False (and it fails at once) after a cancel."""
        with self._lock:
            reason = self._reason
            if reason is None:
                self._ids.append(request_id)
                return True
        self._client.cancel_request(request_id, reason)
        return False


class CallTracker:
    """Which call each thread is making on one client (install :meth:`middleware` among
    the client's ``send_middleware``). Thread-safe."""

    def __init__(self) -> None:
        self._local = threading.local()

    def middleware(self, message: Message, next_: Callable[[Message], None]) -> None:
        """The send middleware: runs on the sending thread, before the message is written."""
        call: TrackedCall | None = getattr(self._local, "call", None)
        if call is not None and isinstance(message, Request) and not call._sent(message.id):
            return  # cancelled already: never sent
        next_(message)

    @contextlib.contextmanager
    def tracking(self, client: CancelsRequests) -> Iterator[TrackedCall]:
        """Track the requests this thread sends to ``client`` inside the block."""
        call = TrackedCall(client)
        previous = getattr(self._local, "call", None)
        self._local.call = call
        try:
            yield call
        finally:
            self._local.call = previous
