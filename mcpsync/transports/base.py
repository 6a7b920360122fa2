"""The transport interface the engine drives.

A transport moves whole messages. It frames, encodes and decodes; it knows nothing of
tools or sessions. ``send`` may be called from several threads at once only under the
engine's write lock, so implementations need not lock themselves; ``receive`` is called from
one reader thread.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..protocol.deadline import Deadline
from ..protocol.jsonrpc import Invalid, Message, RequestId


class CallFailed:
    """A transport's report that one outbound request failed *here*, not at the peer.

    HTTP carries each request on its own exchange, so a refused connection, a silent
    server or an oversized answer fails that one call and no other. The transport hands
    this to the engine in the place of the answer, and the caller gets ``error`` (a
    :class:`~mcpsync.errors.TransportError`), never an ``MCPError`` the peer did not send.
    It bypasses the receive middleware: it is not a message.
    """

    __slots__ = ("error", "request_id")

    def __init__(self, request_id: RequestId, error: BaseException) -> None:
        self.request_id = request_id
        self.error = error

    def __repr__(self) -> str:
        return f"CallFailed({self.request_id!r}, {self.error!r})"


Received = Message | Invalid | CallFailed


class Transport(Protocol):
    """What a connection needs from a transport."""

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        """Write one message. ``related_request_id`` names the inbound request it belongs to
        (HTTP routes it onto that request's stream; stdio ignores it).
        Raises ``ConnectionClosedError`` when the transport is closed."""
        ...

    def receive(self) -> Received | None:
        """Block until a message arrives; ``None`` at end of stream (the peer went away)."""
        ...

    def close(self) -> None:
        """Release the transport. Idempotent; makes a blocked ``receive`` return ``None``."""
        ...


@runtime_checkable
class StreamControl(Protocol):
    """What a transport that carries each request's answer on a stream of its own (the
    handshake-era HTTP session) adds: closing that stream early, the request still running.

    The handler context asks its transport through this, not through the transport's
    internals, so the engine and dispatch need not know HTTP."""

    def close_stream(self, request_id: RequestId) -> bool:
        """Drop the client's connection to ``request_id``'s stream (it resumes later with
        ``Last-Event-ID``); ``False`` when there is no such stream to resume."""
        ...

    def unanswered(self, request_id: RequestId) -> None:
        """No answer to ``request_id`` will be written (the send middleware dropped it):
        end its stream, which only its answer would have ended. A no-op for a request
        already answered or unknown."""
        ...


@runtime_checkable
class OrderedWrites(Protocol):
    """What a transport whose writes are already one at a time, each within its deadline,
    says (a byte stream: its ``PipeWriter`` takes turns by the deadline of each write), so
    that the engine's writer adds no second lock around it: two lock round trips less on
    every message of a stdio peer."""

    @property
    def orders_writes(self) -> bool:
        """``True``: concurrent sends are serialized here, a send waiting its turn no
        longer than its deadline (``DeadlineExceeded``, nothing written)."""
        ...


@runtime_checkable
class CallControl(Protocol):
    """What a transport that carries each outbound request on an exchange of its own (HTTP:
    one POST, and maybe a stream, per call) adds, so that a call's end is its exchange's end.

    A byte-stream transport whose writes can block (stdio: a pipe the peer stopped
    reading) implements it too, so that writing a call ends by the caller's deadline; its
    ``abandon`` has nothing to end. A transport that implements neither (memory) gets plain
    :meth:`Transport.send` and is told nothing.
    """

    def send_call(self, message: Message, deadline: Deadline,
                  related_request_id: RequestId | None = None) -> None:
        """Send ``message`` as :meth:`Transport.send` does, bounded by ``deadline``: the
        deadline its caller waits with. For a request, its whole exchange; the engine also
        gives one to a ``notifications/cancelled`` (a short grace), so that telling the
        peer can not hold the caller either.

        A failure caused by that deadline passing is the caller's to report (it times out
        at the same moment, and tells the peer), not the transport's. A transport that
        writes the message on the caller's thread raises
        :class:`~mcpsync.protocol.deadline.DeadlineExceeded` when not a byte of it was
        written in time (nothing reached the peer), and ``ConnectionClosedError`` when it
        had to end the connection."""
        ...

    def abandon(self, request_id: RequestId) -> None:
        """Nobody waits for ``request_id`` any more (timed out, cancelled, interrupted):
        end its exchange now, so the thread carrying it returns at once, and never reuse
        its connection. A no-op for a request already finished or unknown, and for a
        transport with no exchange per call."""
        ...


@runtime_checkable
class PolledTransport(Protocol):
    """What a byte-stream transport (stdio) adds so that a caller can read its own answer
    (``engine/reading.py``): a receive with a deadline, and whether messages already
    read wait to be taken. One thread at a time reads, as with ``receive``."""

    @property
    def pollable(self) -> bool:
        """Whether :meth:`receive_within` honours its deadline on this platform."""
        ...

    @property
    def buffered(self) -> bool:
        """Whether a message already read waits to be taken."""
        ...

    def receive_within(self, timeout: float) -> Received | None:
        """As ``receive``, waiting at most ``timeout`` seconds: ``TimeoutError`` when no
        whole message arrived in time."""
        ...
