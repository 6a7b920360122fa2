"""The methods every :class:`~mcpsync.Server` answers out of the box, and their table.

The server puts them in its method registry as defaults (a ``method_handler`` of the same
name replaces one). The list and read handlers live with their registries (``tools.py``,
``resources.py``, ``prompts.py``), completion with its completers (``completions.py``)
and ``subscriptions/listen`` with its streams (``listen.py``); what is here is the table
and what belongs to no registry: ``resources/(un)subscribe`` and ``logging/setLevel``
(which act on the caller's session). Apart from ``server.py`` so that the class there
reads as the server's definition: identity, registration, serving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..dispatch.context import HandlerContext
from ..errors import InvalidParamsError, MethodNotFoundError
from .completions import Completions
from .handlers import MethodHandler
from .host import Registered
from .options import ProtocolOptions, ServerLimits
from .session import ServerSession


class Registries(Registered, Protocol):
    """What the built-in list and read methods read of a server (a ``ServerCore``): its
    registries, and the page size of its lists (read at each request). ``server/discover``
    is handed the capabilities by revision too (the dispatcher's ``capabilities_for``)."""

    @property
    def limits(self) -> ServerLimits: ...

    @property
    def protocol(self) -> ProtocolOptions: ...

    @property
    def instructions(self) -> str | None: ...


#: The capabilities a server declares to a revision (``Dispatcher.capabilities_for``).
CapabilitiesFor = Callable[[str], dict[str, Any]]


def core_methods(server: Registries, completions: Completions,
                 capabilities: CapabilitiesFor) -> dict[str, MethodHandler]:
    """The built-ins but ``subscriptions/listen`` (the server's own: it compares the
    registered handler with it), by method."""
    return {
        "ping": lambda ctx, params: {},
        "server/discover": lambda ctx, params: discover(server, capabilities, ctx),
        "tools/list": lambda ctx, params: server.tools.list(ctx, params, server.limits.page_size),
        "tools/call": server.tools.call,
        "logging/setLevel": set_level,
        "resources/list": lambda ctx, params: server.resources.list(
            ctx, params, server.limits.page_size),
        "resources/templates/list": lambda ctx, params: server.resources.list_templates(
            ctx, params, server.limits.page_size),
        "resources/read": server.resources.read,
        "resources/subscribe": subscribe,
        "resources/unsubscribe": unsubscribe,
        "prompts/list": lambda ctx, params: server.prompts.list(
            ctx, params, server.limits.page_size),
        "prompts/get": server.prompts.render,
        "completion/complete": completions.complete,
    }


def discover(server: Registries, capabilities: CapabilitiesFor,
             ctx: HandlerContext) -> dict[str, Any]:
    """``server/discover`` (2026-07-28): the revisions served, and the capabilities and
    instructions as the request's revision sees them. A handshake-era session has no
    such method (its client learnt all of it from ``initialize``)."""
    version = ctx.session.protocol_version
    if version is None or version not in server.protocol.modern_versions:
        raise MethodNotFoundError("Method not found: server/discover",
                                  data={"method": "server/discover"})
    result: dict[str, Any] = {"supportedVersions": list(server.protocol.modern_versions),
                              "capabilities": capabilities(version)}
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _session_of(ctx: HandlerContext, method: str) -> ServerSession:
    session = ctx._session
    if not isinstance(session, ServerSession):
        raise InvalidParamsError(f"{method} is only available in a session")
    return session


def _uri_param(params: dict[str, Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParamsError('Invalid params: "uri" must be a string')
    return uri


def _share(session: ServerSession, kind: str, value: str) -> bool:
    # A session served by several workers (HTTP with a relay) writes the change through
    # to the shared session state, so that every worker applies it; the transport knows
    # whether there is such a thing (``share``), the session need not. True: the shared
    # state holds the subscription, and the session must not keep a copy of its own.
    share = getattr(session.connection.transport, "share", None)
    return bool(share(kind, value)) if callable(share) else False


def subscribe(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
    session, uri = _session_of(ctx, "resources/subscribe"), _uri_param(params)
    if not session.server.subscribers.offered:  # not declared: not served either
        raise MethodNotFoundError("Method not found: resources/subscribe (this server "
                                  "offers no resource subscriptions)",
                                  data={"method": "resources/subscribe"})
    if ctx.server.resources.hidden(uri, ctx):
        return {}  # answered as any URI is, and never told of: it is not the caller's
    if not _share(session, "subscribe", uri):
        session.subscribe(uri)
    return {}


def unsubscribe(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
    session, uri = _session_of(ctx, "resources/unsubscribe"), _uri_param(params)
    if not _share(session, "unsubscribe", uri):
        session.unsubscribe(uri)
    return {}


def set_level(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if not isinstance(level, str):
        raise InvalidParamsError('Invalid params: "level" must be a string')
    session = _session_of(ctx, "logging/setLevel")
    session.set_log_level(level)
    _share(session, "level", level)
    return {}
