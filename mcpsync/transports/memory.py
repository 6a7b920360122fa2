"""An in-process transport pair, for tests and for embedding a server in its client.

Messages are encoded to JSON and decoded again on the way across, so what crosses is
exactly what would cross a real wire: a handler that returns something not JSON-encodable
fails here as it would over stdio.
"""

from __future__ import annotations

import queue
from typing import Protocol

from ..errors import ConnectionClosedError
from ..protocol import jsonrpc
from ..protocol.jsonrpc import Message, RequestId
from .base import Received, Transport


class Closable(Protocol):
    def close(self) -> None: ...


class InProcessServer(Protocol):
    """What a client needs of a server in its own process (a ``mcpsync.Server``): to
    connect it to one end of a :func:`memory_pair`. A protocol, so that the client and a
    proxy name it without importing the server package (which imports them)."""

    def connect(self, transport: Transport, *, name: str) -> Closable: ...

_EOF = object()


class MemoryTransport:
    """One end of a pair made by :func:`memory_pair`. Thread-safe."""

    def __init__(self, inbox: queue.SimpleQueue[object], outbox: queue.SimpleQueue[object]):
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            raise ConnectionClosedError("memory transport is closed")
        self._outbox.put(jsonrpc.encode(message))

    def receive(self) -> Received | None:
        item = self._inbox.get()
        if item is _EOF:
            self._inbox.put(_EOF)  # stay at EOF for any later call
            return None
        assert isinstance(item, bytes)
        return jsonrpc.decode(item)[0]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.put(_EOF)
        self._outbox.put(_EOF)


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives."""
    a_to_b: queue.SimpleQueue[object] = queue.SimpleQueue()
    b_to_a: queue.SimpleQueue[object] = queue.SimpleQueue()
    return MemoryTransport(b_to_a, a_to_b), MemoryTransport(a_to_b, b_to_a)
