"""Per-item OAuth scopes: what a request needs, and the one rule that decides.

A tool, a resource (fixed or templated) and a prompt may each be registered with
``scopes=[...]``: the caller's access token (``ctx.auth``) must carry them to call, read,
subscribe to, complete or get it. :func:`required_scopes` maps a request to what it needs
through the registries' own lookups (a URI resolves exactly as ``resources/read``
resolves it), and it is asked on one path for every transport and era: by the WSGI app
before dispatch (a 403 ``insufficient_scope`` whose challenge the client can step up
with) and by ``Dispatcher.run_handler`` before any handler runs (a JSON-RPC error, for stdio,
memory, or an auth layer of the host's own). A task is refused before it is created.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..errors import INVALID_REQUEST, MCPError
from ..protocol.methods import VIEWS

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext


class Scoped(Protocol):
    """A registered tool, prompt or resource, as far as scopes go."""

    @property
    def scopes(self) -> tuple[str, ...]: ...


class Named(Protocol):
    """The tools or the prompts of a server, looked up by name."""

    def get(self, name: str) -> Scoped | None: ...

    def find(self, name: str, ctx: HandlerContext) -> Scoped | None: ...


class Resources(Protocol):
    """The resources of a server, looked up as ``resources/read`` and completion do."""

    @property
    def has_scoped(self) -> bool: ...

    def template(self, uri_template: str) -> Scoped | None: ...

    def resolve(self, uri: str) -> tuple[Scoped, dict[str, str]] | None: ...

    def hidden(self, uri: str, ctx: HandlerContext) -> bool: ...

    def visible_template(self, uri_template: str, ctx: HandlerContext) -> Scoped | None: ...


class Catalog(Protocol):
    """What the scope rules read of a server: its three registries (those of
    ``tools.py``, ``prompts.py`` and ``resources.py``, which import this module for
    :func:`permits`, so they are named by these protocols here)."""

    @property
    def tools(self) -> Named: ...

    @property
    def prompts(self) -> Named: ...

    @property
    def resources(self) -> Resources: ...


@dataclass(frozen=True)
class Requirement:
    """What one request needs: the scopes, and what they guard (for the error message)."""

    what: str
    scopes: tuple[str, ...]


def as_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """``scopes=`` of a registration, checked: a bare string would be its characters."""
    if isinstance(scopes, str):
        raise TypeError("scopes must be a list of scope names, not a string")
    return tuple(scopes)


def permits(auth: Any, scopes: Iterable[str]) -> bool:
    """Whether the principal ``auth`` carries every one of ``scopes``. No principal (or
    one without ``scopes``) has none: a scoped item fails closed."""
    needed = set(scopes)
    if not needed:
        return True
    granted = getattr(auth, "scopes", None)
    return granted is not None and needed <= set(granted)


def required_scopes(server: Catalog, method: str, params: Any) -> Requirement | None:
    """The scopes request ``method`` with ``params`` needs on ``server``, or ``None`` when
    it needs none (or names nothing registered: the handler then answers "not found").
    Malformed params need nothing here; the handler refuses them as it always does."""
    if not isinstance(params, dict):
        return None
    target = _SCOPED.get(method)
    if target is not None:  # the item the method's target param names
        named = params.get(_TARGET_PARAM[method])
        if target == "tool":
            return _tool(server, named)
        return _prompt(server, named) if target == "prompt" else _resource(server, named)
    if method == "completion/complete":
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        if ref.get("type") == "ref/prompt":
            return _prompt(server, ref.get("name"))
        if ref.get("type") == "ref/resource":
            template = ref.get("uri")
            found = server.resources.template(template) if isinstance(template, str) else None
            return _of(f"resource template {template!r}", found)
        return None
    if method == "subscriptions/listen":
        wanted = params.get("notifications")
        uris = wanted.get("resourceSubscriptions") if isinstance(wanted, dict) else None
        if not isinstance(uris, list):
            return None
        needs = [r for r in (_resource(server, uri) for uri in dict.fromkeys(
            u for u in uris if isinstance(u, str))) if r is not None]
        if not needs:
            return None
        scopes = tuple(dict.fromkeys(s for r in needs for s in r.scopes))
        return Requirement(", ".join(r.what for r in needs), scopes)
    return None


#: The methods per-item scopes guard, by the kind of item their target is (the method
#: table's scoped rows), and the param that names the item.
_SCOPED: Final = VIEWS.scoped
_TARGET_PARAM: Final = VIEWS.target_param
_TOOL_METHODS: Final = VIEWS.tool_methods


def check(server: Catalog, ctx: HandlerContext, method: str, params: Any) -> None:
    """Refuse a request whose principal (``ctx.auth``) lacks the scopes it needs: a
    JSON-RPC error whose data names them (``insufficient_scope``), as the 403 does."""
    if method in _TOOL_METHODS and isinstance(params, dict):
        # The hot path, decided in place: a tool registered without scopes (or no tool of
        # that name) needs nothing, as required_scopes would say.
        name = params.get("name")
        tool = server.tools.get(name) if isinstance(name, str) else None
        if tool is None or not tool.scopes:
            return
    needed = required_scopes(server, method, params)
    if needed is None or permits(ctx.auth, needed.scopes) or _hidden(server, ctx, method,
                                                                      params):
        return  # (a component hidden from the caller: the handler answers "unknown")
    scope = " ".join(needed.scopes)
    raise MCPError(f"Forbidden: {needed.what} needs the scope(s) {scope}",
                   code=INVALID_REQUEST, data={"error": "insufficient_scope", "scope": scope})


def _hidden(server: Catalog, ctx: HandlerContext, method: str, params: dict[str, Any]) -> bool:
    """Whether the item a scoped request targets is hidden from its caller (visibility):
    then it is answered as unknown, never with the scopes that would let it through."""
    target = _SCOPED.get(method)
    if target is not None:
        named = params.get(_TARGET_PARAM[method])
        if not isinstance(named, str):
            return False
        if target == "tool":
            return server.tools.find(named, ctx) is None
        if target == "prompt":
            return server.prompts.find(named, ctx) is None
        return server.resources.hidden(named, ctx)
    ref = params.get("ref") if method == "completion/complete" else None
    if isinstance(ref, dict) and ref.get("type") == "ref/prompt":
        return server.prompts.find(str(ref.get("name")), ctx) is None
    if isinstance(ref, dict) and ref.get("type") == "ref/resource":
        return server.resources.visible_template(str(ref.get("uri")), ctx) is None
    return False


def reader(server: Catalog, auth: Any) -> Callable[[str], bool]:
    """Whether ``auth`` may read a URI, for filtering updates at delivery: a listen on a
    URI that needs nothing (``notes://``) covers sub-resources that may need scopes.
    Cheap while the server has no scoped resource (no URI is resolved then)."""

    def may_read(uri: str) -> bool:
        if not server.resources.has_scoped:
            return True
        needed = _resource(server, uri)
        return needed is None or permits(auth, needed.scopes)

    return may_read


def _of(what: str, item: Scoped | None) -> Requirement | None:
    scopes: tuple[str, ...] = getattr(item, "scopes", ())
    return Requirement(what, scopes) if scopes else None


def _tool(server: Catalog, name: Any) -> Requirement | None:
    tool = server.tools.get(name) if isinstance(name, str) else None
    return _of(f"tool {name!r}", tool)


def _prompt(server: Catalog, name: Any) -> Requirement | None:
    prompt = server.prompts.get(name) if isinstance(name, str) else None
    return _of(f"prompt {name!r}", prompt)


def _resource(server: Catalog, uri: Any) -> Requirement | None:
    found = server.resources.resolve(uri) if isinstance(uri, str) else None
    return _of(f"resource {uri!r}", found[0] if found is not None else None)
