"""The server as the code that answers a request sees it: :class:`RequestServer`, and
its registries as the parts that read them see them: :class:`Registered`.

A request is answered in a session (``session.py``, the handshake era) or on its own
(``stateless.py``, 2026-07-28, and the HTTP app's 2026-07-28 requests): both read the
server's public options through this protocol, which
:class:`~mcpsync.server.server.ServerCore` implements, so that neither imports the server
class (which imports them). What answering needs that is not public (the handlers, how
they run, the identity and capabilities by revision, the ``requestState`` key) they are
handed as the server's :class:`~mcpsync.server.dispatcher.Dispatcher`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..dispatch.registry import MethodRegistry
from .handlers import MethodHandler
from .options import ProtocolOptions, ServerLimits

if TYPE_CHECKING:
    from .prompts import PromptRegistry
    from .resources import ResourceRegistry
    from .tools import ToolRegistry


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


class Registered(Protocol):
    """A server's three registries (a ``ServerCore``'s), as the parts that read them
    declare them: the built-in list and read methods, visibility, mounting."""

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def resources(self) -> ResourceRegistry: ...

    @property
    def prompts(self) -> PromptRegistry: ...


__all__ = ["Registered", "RequestServer"]
