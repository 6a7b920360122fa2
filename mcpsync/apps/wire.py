"""What MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``, stable 2026-01-26) puts on the
MCP wire, read the same way by the server extension and by the host: the identifiers,
where a tool names its view, who may call a tool, and whether a client can show views.

Pure functions on wire dicts and typed items: no threads, no I/O (both sides import it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

#: The extension's identifier in ``capabilities.extensions``.
EXTENSION: Final = "io.modelcontextprotocol/ui"
#: The MIME type of an HTML view (the only one the 2026-01-26 revision defines).
MIME_TYPE: Final = "text/html;profile=mcp-app"
#: The revision of the view <-> host protocol (``ui/initialize``'s ``protocolVersion``).
UI_PROTOCOL_VERSION: Final = "2026-01-26"
#: The scheme every view's URI has.
SCHEME: Final = "ui://"
#: The flat key the revision keeps, deprecated, beside ``_meta.ui.resourceUri``: hosts
#: that predate the nested form still read it, so a server writes both.
FLAT_URI_KEY: Final = "ui/resourceUri"
#: Who may call a tool: the model (it is in the model's tool list) and/or the view.
AUDIENCES: Final = ("model", "app")


#: A source a view may declare in ``_meta.ui.csp``: an http(s)/ws(s) origin, a ``*.``
#: first label allowed. Both sides check it: the server at registration, the host before
#: it builds a policy (so a declaration cannot smuggle ``'unsafe-eval'``, ``*`` or ``;``).
_ORIGIN: Final = re.compile(
    r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})(?::[0-9]{1,5})?/?")


def is_origin(source: object) -> bool:
    """Whether ``source`` may be declared in ``_meta.ui.csp`` (``scheme://host[:port]``)."""
    return isinstance(source, str) and _ORIGIN.fullmatch(source) is not None


def _meta_of(item: Any) -> Mapping[str, Any]:
    """``_meta`` of a wire dict or of a typed item (its ``meta`` attribute)."""
    meta = item.get("_meta") if isinstance(item, Mapping) else getattr(item, "meta", None)
    return meta if isinstance(meta, Mapping) else {}


def ui_meta(item: Any) -> Mapping[str, Any]:
    """The ``_meta.ui`` object of a tool or resource (empty when it has none)."""
    ui = _meta_of(item).get("ui")
    return ui if isinstance(ui, Mapping) else {}


def view_uri(tool: Any) -> str | None:
    """The ``ui://`` URI of the view a tool links to (``_meta.ui.resourceUri``, or the
    deprecated flat ``_meta["ui/resourceUri"]``), or None: it has none."""
    uri = ui_meta(tool).get("resourceUri")
    if not isinstance(uri, str):
        uri = _meta_of(tool).get(FLAT_URI_KEY)
    return uri if isinstance(uri, str) and uri.startswith(SCHEME) else None


def visibility(tool: Any) -> tuple[str, ...]:
    """Who may call ``tool``: ``_meta.ui.visibility``, ``("model", "app")`` when omitted
    (the revision's default). Unknown audiences are dropped."""
    given = ui_meta(tool).get("visibility")
    if not isinstance(given, (list, tuple)):
        return AUDIENCES
    return tuple(a for a in AUDIENCES if a in given)


def model_visible(tool: Any) -> bool:
    """Whether a host may show ``tool`` to its model (the revision: a host MUST NOT list
    a tool whose visibility lacks ``"model"`` in the agent's tool list)."""
    return "model" in visibility(tool)


def app_visible(tool: Any) -> bool:
    """Whether a view may call ``tool`` (a host MUST reject the others)."""
    return "app" in visibility(tool)


def declares_apps(capabilities: Any) -> bool:
    """Whether client ``capabilities`` declare the extension with the HTML MIME type:
    such a client can show views."""
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")
    if not isinstance(extensions, Mapping):
        return False
    settings = extensions.get(EXTENSION)
    if not isinstance(settings, Mapping):
        return False
    types = settings.get("mimeTypes")
    return isinstance(types, (list, tuple)) and MIME_TYPE in types


def host_capabilities() -> dict[str, Any]:
    """What a client that shows views declares (``extra_capabilities=`` of a Client)."""
    return {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}


__all__ = ["AUDIENCES", "EXTENSION", "FLAT_URI_KEY", "MIME_TYPE", "SCHEME",
           "UI_PROTOCOL_VERSION", "app_visible", "declares_apps", "host_capabilities",
           "is_origin", "model_visible", "ui_meta", "view_uri", "visibility"]
