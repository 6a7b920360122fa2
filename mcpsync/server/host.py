"""The server as the code that answers a request sees it: :class:`RequestServer`.

A request is answered in a session (``session.py``, the handshake era) or on its own
(``stateless.py``, 2026-07-28, and the HTTP app's 2026-07-28 requests): both read the
server's identity, versions and capabilities, and run its handlers. They are typed
against this protocol, which :class:`~mcpsync.server.server.ServerCore` implements, so
that neither imports the server class (which imports them).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..dispatch.context import HandlerContext
from ..dispatch.registry import MethodRegistry, RequestHandlers
from .extensions import Extensions
from .handlers import MethodHandler
from .options import ProtocolOptions, ServerLimits


class RequestServer(Protocol):
    """What answering one request needs of the server: a ``ServerCore``."""

    @property
    def methods(self) -> MethodRegistry[MethodHandler, Any]: ...

    @property
    def _method_handlers(self) -> RequestHandlers[MethodHandler]: ...

    @property
    def protocol(self) -> ProtocolOptions: ...

    @property
    def instructions(self) -> str | None: ...

    @property
    def _request_state_key(self) -> bytes: ...

    @property
    def limits(self) -> ServerLimits: ...

    @property
    def _extensions(self) -> Extensions: ...

    def _info_for(self, version: str | None) -> dict[str, Any]: ...

    def _capabilities_for(self, version: str) -> dict[str, Any]: ...

    def _run_handler(self, handler: MethodHandler, ctx: HandlerContext,
                     params: dict[str, Any]) -> dict[str, Any]: ...


__all__ = ["RequestServer"]
