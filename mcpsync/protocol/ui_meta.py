"""The part of MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``) that layers below the
apps extension read: who may call a tool (``_meta.ui.visibility``) and whether a client
declared it can show views.

Why here, on the protocol floor, and not only in :mod:`mcpsync.apps.wire` (which
re-exports these): a proxy must know whether its caller shows views before it forwards
an app-only tool, and the model helpers (:mod:`mcpsync.llm`) must keep such a tool from
a model; both sit below ``apps/``, which they must not import. Pure functions on wire
dicts and typed items.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: The extension's identifier in ``capabilities.extensions``.
EXTENSION: Final = "io.modelcontextprotocol/ui"
#: The MIME type of an HTML view (the only one the 2026-01-26 revision defines).
MIME_TYPE: Final = "text/html;profile=mcp-app"
#: Who may call a tool: the model (it is in the model's tool list) and/or the view.
AUDIENCES: Final = ("model", "app")


def meta_of(item: Any) -> Mapping[str, Any]:
    """``_meta`` of a wire dict or of a typed item (its ``meta`` attribute)."""
    meta = item.get("_meta") if isinstance(item, Mapping) else getattr(item, "meta", None)
    return meta if isinstance(meta, Mapping) else {}


def ui_meta(item: Any) -> Mapping[str, Any]:
    """The ``_meta.ui`` object of a tool or resource (empty when it has none)."""
    ui = meta_of(item).get("ui")
    return ui if isinstance(ui, Mapping) else {}


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


__all__ = ["AUDIENCES", "EXTENSION", "MIME_TYPE", "declares_apps", "meta_of", "model_visible",
           "ui_meta", "visibility"]
