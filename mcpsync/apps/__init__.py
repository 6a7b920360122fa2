"""MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``): tools that come with an
interactive HTML view. See docs/apps.md.

* the wire rules both sides read: :mod:`mcpsync.apps.wire`;
* the server extension (``server.use(Apps())``, views, tools linked with ``ui=``):
  :mod:`mcpsync.apps.extension`;
* the host (a client that shows views): :mod:`mcpsync.apps.host` and
  ``mcpsync apps preview``.

Light at import: the names below are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .wire import (
    EXTENSION,
    MIME_TYPE,
    UI_PROTOCOL_VERSION,
    app_visible,
    declares_apps,
    host_capabilities,
    model_visible,
    view_uri,
    visibility,
)

if TYPE_CHECKING:
    from .extension import Apps, client_shows_apps
    from .host.bridge import Bridge
    from .host.preview import PreviewServers, preview_of
    from .host.view import View, ViewError, fetch_view, tools_with_views

_LAZY = {
    "Apps": ".extension", "client_shows_apps": ".extension",
    "Bridge": ".host.bridge", "PreviewServers": ".host.preview", "preview_of": ".host.preview",
    "View": ".host.view", "ViewError": ".host.view", "fetch_view": ".host.view",
    "tools_with_views": ".host.view",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpsync.apps' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = ["EXTENSION", "MIME_TYPE", "UI_PROTOCOL_VERSION", "Apps", "Bridge", "PreviewServers",
           "View", "ViewError", "app_visible", "client_shows_apps", "declares_apps",
           "fetch_view",
           "host_capabilities", "model_visible", "preview_of", "tools_with_views",
           "view_uri", "visibility"]
