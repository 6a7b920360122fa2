"""The methods every :class:`~mcpsync.Server` answers out of the box, and their table.

``install_core_methods`` puts them in the server's method registry as defaults (a
``method_handler`` of the same name replaces one). The list and read handlers live with
their registries (``tools.py``, ``resources.py``, ``prompts.py``) and ``subscriptions/listen``
with its streams (``listen.py``); what is here is what belongs to no registry: completion
(which looks up prompts, templates and completers), ``resources/(un)subscribe`` and
``logging/setLevel`` (which act on the caller's session). Apart from ``server.py`` so that
the class there reads as the server's definition: identity, registration, serving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..dispatch.context import HandlerContext
from ..errors import InvalidParamsError, MethodNotFoundError
from .prompts import complete
from .session import ServerSession

if TYPE_CHECKING:
    from .server import MethodHandler, Server


def install_core_methods(server: Server) -> None:
    """Install the built-ins as defaults: a ``method_handler`` of the same name replaces one."""
    core: dict[str, MethodHandler] = {
        "ping": lambda ctx, params: {},
        "tools/list": lambda ctx, params: server.tools.list(ctx, params, server.page_size),
        "tools/call": server.tools.call,
        "logging/setLevel": set_level,
        "resources/list": lambda ctx, params: server.resources.list(
            ctx, params, server.page_size),
        "resources/templates/list": lambda ctx, params: server.resources.list_templates(
            ctx, params, server.page_size),
        "resources/read": server.resources.read,
        "resources/subscribe": subscribe,
        "resources/unsubscribe": unsubscribe,
        "prompts/list": lambda ctx, params: server.prompts.list(ctx, params, server.page_size),
        "prompts/get": server.prompts.render,
        "completion/complete": lambda ctx, params: complete_request(server, ctx, params),
        "subscriptions/listen": server._listen,
    }
    for method, handler in core.items():
        server.methods.set_default(method, handler)


def complete_request(server: Server, ctx: HandlerContext,
                     params: dict[str, Any]) -> dict[str, Any]:
    """``completion/complete``: the registered completer of a prompt argument or template
    variable, after the checks of ``ref``, ``argument`` and ``context``."""
    ref = params.get("ref")
    argument = params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise InvalidParamsError('Invalid params: "ref" and "argument" must be objects')
    kind = ref.get("type")
    key = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
    if kind == "ref/prompt" and server.prompts.get(str(key)) is None:
        raise InvalidParamsError(f"Unknown prompt: {key}")
    if kind == "ref/resource" and server.resources.template(str(key)) is None:
        raise InvalidParamsError(f"Unknown resource template: {key}")
    if kind not in ("ref/prompt", "ref/resource"):
        raise InvalidParamsError(f"Invalid params: unknown reference type {kind!r}")
    name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(name, str) or not isinstance(value, str):
        raise InvalidParamsError("Invalid params: argument name and value must be strings")
    context = params.get("context")
    if context is not None and not isinstance(context, dict):
        raise InvalidParamsError('Invalid params: "context" must be an object')
    context_arguments = (context or {}).get("arguments")
    if context_arguments is not None and not (isinstance(context_arguments, dict) and all(
            isinstance(v, str) for v in context_arguments.values())):
        raise InvalidParamsError(
            'Invalid params: "context.arguments" must map names to strings')
    completer = server._completers.get((str(kind), str(key), name))
    if completer is None:
        return {"completion": {"values": [], "total": 0, "hasMore": False}}
    return complete(completer, value, dict(context_arguments or {}))


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
