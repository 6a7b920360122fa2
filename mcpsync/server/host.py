"""The server as the code that answers a request sees it: :class:`RequestServer`.

A request is answered in a session (``session.py``, the handshake era) or on its own
(``stateless.py``, 2026-07-28, and the HTTP app's 2026-07-28 requests): both read the
server's public options through this protocol, which
:class:`~mcpsync.server.server.ServerCore` implements, so that neither imports the server
class (which imports them). What answering needs that is not public (the handlers, how
they run, the identity and capabilities by revision, the ``requestState`` key) they are
handed as the server's :class:`~mcpsync.server.dispatcher.Dispatcher`.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..dispatch.registry import MethodRegistry
from .handlers import MethodHandler
from .options import ProtocolOptions, ServerLimits


class RequestServer(Protocol):
    """What answering one request reads of the server: a ``ServerCore``."""

    @property
    def methods(self) -> MethodRegistry[MethodHandler, Any]: ...

    @property
    def protocol(self) -> ProtocolOptions: ...

    @property
    def instructions(self) -> str | None: ...

    @property
    def limits(self) -> ServerLimits: ...


__all__ = ["RequestServer"]
