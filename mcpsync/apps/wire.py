"""What MCP Apps (SEP-1865, ``io.modelcontextprotocol/ui``, stable 2026-01-26) puts on the
MCP wire, read the same way by the server extension and by the host: the identifiers,
where a tool names its view, who may call a tool, and whether a client can show views.

Pure functions on wire dicts and typed items: no threads, no I/O (both sides import it).
"""

from __future__ import annotations

import re
from typing import Any, Final

# The visibility and the client's declaration are read below this package too (a proxy,
# the model helpers): one definition, on the protocol floor.
from ..protocol.ui_meta import (
    AUDIENCES,
    EXTENSION,
    MIME_TYPE,
    declares_apps,
    meta_of,
    model_visible,
    ui_meta,
    visibility,
)

#: The revision of the view <-> host protocol (``ui/initialize``'s ``protocolVersion``).
UI_PROTOCOL_VERSION: Final = "2026-01-26"
#: The scheme every view's URI has.
SCHEME: Final = "ui://"
#: The flat key the revision keeps, deprecated, beside ``_meta.ui.resourceUri``: hosts
#: that predate the nested form still read it, so a server writes both.
FLAT_URI_KEY: Final = "ui/resourceUri"


#: A source a view may declare in ``_meta.ui.csp``: an http(s)/ws(s) origin, a ``*.``
#: first label allowed. Both sides check it: the server at registration, the host before
#: it builds a policy (so a declaration cannot smuggle ``'unsafe-eval'``, ``*`` or ``;``).
_ORIGIN: Final = re.compile(
    r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})(?::[0-9]{1,5})?/?")


def is_origin(source: object) -> bool:
    """Whether ``source`` may be declared in ``_meta.ui.csp`` (``scheme://host[:port]``)."""
    return isinstance(source, str) and _ORIGIN.fullmatch(source) is not None


def view_uri(tool: Any) -> str | None:
    """The ``ui://`` URI of the view a tool links to (``_meta.ui.resourceUri``, or the
    deprecated flat ``_meta["ui/resourceUri"]``), or None: it has none."""
    uri = ui_meta(tool).get("resourceUri")
    if not isinstance(uri, str):
        uri = meta_of(tool).get(FLAT_URI_KEY)
    return uri if isinstance(uri, str) and uri.startswith(SCHEME) else None


def app_visible(tool: Any) -> bool:
    """Whether a view may call ``tool`` (a host MUST reject the others)."""
    return "app" in visibility(tool)


def host_capabilities() -> dict[str, Any]:
    """What a client that shows views declares (``extra_capabilities=`` of a Client)."""
    return {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}


__all__ = ["AUDIENCES", "EXTENSION", "FLAT_URI_KEY", "MIME_TYPE", "SCHEME",
           "UI_PROTOCOL_VERSION", "app_visible", "declares_apps", "host_capabilities",
           "is_origin", "model_visible", "ui_meta", "view_uri", "visibility"]
