"""The server side of MCP Apps: ``apps = server.use(Apps())``.

* :meth:`Apps.view` declares a ``ui://`` resource of MIME type ``text/html;profile=mcp-app``
  whose HTML is a string, a function called per read, or a Jinja2 / Django template
  rendered per read; its ``_meta.ui`` (CSP domains, permissions, border and domain
  preferences) is on the listed resource and on the content read, where hosts look.
* A tool links to a view with the tool keywords this extension declares (through the
  component-options seam, as tasks declares ``task=``): ``@server.tool(ui="ui://...",
  ui_visibility=["app"])``. The tool is described with ``_meta.ui`` (``resourceUri``,
  ``visibility``) and the flat ``_meta["ui/resourceUri"]`` the revision keeps for older
  hosts.
* :func:`client_shows_apps` tells a tool whether the client declared the extension with
  the HTML MIME type (either era: the handshake's capabilities or the request's
  ``_meta``), so it can adapt; a tool always returns text content, which is all a client
  without apps shows.
* A tool whose visibility lacks ``"model"`` is left out of ``tools/list`` for a client
  that did not declare the extension, and answered as an unknown tool if it calls it: it
  has no view to call it from, and its model must not see it. A client that declared it
  gets every tool with its visibility (the revision: the HOST keeps app-only tools from
  its model, and refuses a view the model-only ones).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..dispatch.context import HandlerContext
from ..errors import InvalidParamsError
from ..protocol.versions import META_CAPABILITIES
from ..server.component_options import Kind, OptionSpec
from ..types import TextResourceContents
from .wire import (
    AUDIENCES,
    EXTENSION,
    FLAT_URI_KEY,
    MIME_TYPE,
    SCHEME,
    declares_apps,
    is_origin,
    visibility,
)

if TYPE_CHECKING:
    from ..server.server import ServerCore

#: Where a tool's apps options are kept (``tool.options[KEY]``).
KEY: Final = "apps"
Handler = Callable[[HandlerContext, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class AppTool:
    """How one tool is shown: the view it links to (None: none) and who may call it."""

    resource_uri: str | None
    visibility: tuple[str, ...] = AUDIENCES


def client_shows_apps(ctx: HandlerContext) -> bool:
    """Whether the client of this request can show views: it declared
    ``io.modelcontextprotocol/ui`` with ``text/html;profile=mcp-app`` (in the handshake's
    capabilities, or in a 2026-07-28 request's ``_meta``)."""
    return declares_apps(ctx.session.client_capabilities) or declares_apps(
        ctx.meta.get(META_CAPABILITIES))


def _parse(kind: Kind, given: dict[str, Any]) -> AppTool | None:
    uri = given.get("ui")
    if uri is not None and (not isinstance(uri, str) or not uri.startswith(SCHEME)):
        raise ValueError(f"ui= must be a ui:// URI, not {uri!r}")
    audiences = given.get("ui_visibility", AUDIENCES)
    if isinstance(audiences, str) or not isinstance(audiences, Iterable):
        raise ValueError("ui_visibility= must be a list of 'model' and/or 'app'")
    audiences = tuple(audiences)
    unknown = [a for a in audiences if a not in AUDIENCES]
    if unknown or not audiences:
        raise ValueError(f"ui_visibility= must be a non-empty list of 'model' and/or 'app', "
                         f"not {list(audiences)!r}")
    return AppTool(uri, tuple(a for a in AUDIENCES if a in audiences))


def _describe(kind: Kind, value: AppTool, wire: dict[str, Any]) -> None:
    meta = dict(wire.get("_meta") or {})
    ui = dict(meta.get("ui") or {})
    if value.resource_uri is not None:
        ui["resourceUri"] = value.resource_uri
        meta[FLAT_URI_KEY] = value.resource_uri
    ui["visibility"] = list(value.visibility)
    meta["ui"] = ui
    wire["_meta"] = meta


#: The tool keywords the extension declares.
SPEC: Final = OptionSpec(KEY, frozenset({"ui", "ui_visibility"}), frozenset({"tool"}),
                         _parse, _describe)


def _ui_meta(csp: Mapping[str, Iterable[str]] | None, permissions: Iterable[str] | None,
             domain: str | None, prefers_border: bool | None) -> dict[str, Any]:
    ui: dict[str, Any] = {}
    if csp:
        fields = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
        unknown = sorted(set(csp) - set(fields))
        if unknown:
            raise ValueError(f"csp keys are {', '.join(fields)}; not {', '.join(unknown)}")
        for field, sources in csp.items():
            if isinstance(sources, str) or not all(is_origin(d) for d in sources):
                raise ValueError(f"csp[{field!r}] is a list of origins (scheme://host[:port], "
                                 f"a *. first label allowed), not {sources!r}")
        ui["csp"] = {k: list(v) for k, v in csp.items()}
    if permissions:
        known = ("camera", "microphone", "geolocation", "clipboardWrite")
        wanted = list(permissions)
        if any(p not in known for p in wanted):
            raise ValueError(f"permissions are among {', '.join(known)}; not {wanted!r}")
        ui["permissions"] = {p: {} for p in wanted}
    if domain is not None:
        ui["domain"] = domain
    if prefers_border is not None:
        ui["prefersBorder"] = bool(prefers_border)
    return ui


def _renderer(html: Any, context: Any) -> Callable[[HandlerContext], str]:
    """How to make the view's HTML at each read: a string as is; a template (an object
    with ``render``: Jinja2's ``Template``, Django's ``get_template`` result or its
    ``django.template.Template``) rendered with ``context`` (a dict, or ``fn(ctx)``
    returning one); a function called (with the request's context if it takes one)."""
    if isinstance(html, str):
        return lambda ctx: html
    if callable(getattr(html, "render", None)):
        def render(ctx: HandlerContext) -> str:
            values = context(ctx) if callable(context) else dict(context or {})
            if type(html).__module__ == "django.template.base":  # the engine's own class
                from django.template import Context
                return str(html.render(Context(values)))
            return str(html.render(values))
        return render
    if callable(html):
        takes_ctx = bool(inspect.signature(html).parameters)
        return lambda ctx: str(html(ctx) if takes_ctx else html())
    raise TypeError("a view's html is a string, a template (with render) or a function")


class Apps:
    """The MCP Apps extension of one server (``server.use(Apps())``)."""

    identifier = EXTENSION

    def __init__(self) -> None:
        self._server: ServerCore | None = None

    # -- Extension -------------------------------------------------------------------------

    def install(self, server: ServerCore) -> None:
        if self._server is not None:
            raise ValueError("an Apps extension serves one server only")
        self._server = server
        server.declare_options(SPEC)
        server.wrap_method("tools/list", self._list_tools)
        server.wrap_method("tools/call", self._call_tool)

    def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
        capabilities["extensions"] = {**capabilities.get("extensions", {}),
                                      EXTENSION: {"mimeTypes": [MIME_TYPE]}}

    def close(self, timeout: float) -> bool:
        return True

    # -- views -----------------------------------------------------------------------------

    def view(self, uri: str, html: Any = None, *, name: str | None = None,
             title: str | None = None, description: str | None = None,
             context: Mapping[str, Any] | Callable[[HandlerContext], Mapping[str, Any]]
             | None = None,
             csp: Mapping[str, Iterable[str]] | None = None,
             permissions: Iterable[str] | None = None, domain: str | None = None,
             prefers_border: bool | None = None, **options: Any) -> Any:
        """Declare the view at ``uri`` (``ui://...``). ``html``: its HTML (a string), a
        template (``render(context)``), or a function (called per read, given the
        request's ``HandlerContext`` if it takes a parameter). Without ``html`` this is a
        decorator for that function. ``csp``: ``{"connectDomains": [...],
        "resourceDomains": [...], "frameDomains": [...], "baseUriDomains": [...]}``, the
        origins the view needs (a host allows nothing else). ``permissions``: among
        ``camera``, ``microphone``, ``geolocation``, ``clipboardWrite``. ``domain`` and
        ``prefers_border``: the revision's dedicated origin and border preference.
        ``**options``: the resource keywords of the server's other extensions
        (``permission=``, ``tags=``: docs/permissions.md)."""
        server = self._server
        if server is None:
            raise RuntimeError("server.use(Apps()) first")
        if not uri.startswith(SCHEME) or "{" in uri:
            raise ValueError(f"a view's URI is a fixed ui:// URI, not {uri!r}")
        ui = _ui_meta(csp, permissions, domain, prefers_border)
        meta = {"ui": ui} if ui else None

        def register(source: Any) -> Any:
            make = _renderer(source, context)

            def read(ctx: HandlerContext) -> TextResourceContents:
                return TextResourceContents(uri=uri, mime_type=MIME_TYPE, text=make(ctx),
                                            meta=meta)

            server.resource(uri, name=name or uri[len(SCHEME):], title=title,
                            description=description, mime_type=MIME_TYPE, meta=meta,
                            **options)(read)
            return source

        if html is None:
            return register
        register(html)
        return None

    # -- the wrapped methods ----------------------------------------------------------------

    def _list_tools(self, inner: Handler) -> Handler:
        def list_tools(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            result = inner(ctx, params)
            tools = result.get("tools")
            if not isinstance(tools, list) or client_shows_apps(ctx):
                return result
            shown = [t for t in tools if not isinstance(t, dict) or "model" in visibility(t)]
            return result if len(shown) == len(tools) else {**result, "tools": shown}
        return list_tools

    def _call_tool(self, inner: Handler) -> Handler:
        def call_tool(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            name = params.get("name")
            server = self._server
            if isinstance(name, str) and server is not None and not client_shows_apps(ctx):
                tool = server.tools.get(name)
                if tool is not None and "model" not in visibility(tool.description):
                    raise InvalidParamsError(f"Unknown tool: {name}", data={"name": name})
            return inner(ctx, params)
        return call_tool


__all__ = ["KEY", "SPEC", "AppTool", "Apps", "client_shows_apps"]
