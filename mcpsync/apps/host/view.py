"""The client side of a view: which of a server's tools have one, and fetching it.

A host reads a view with ``resources/read`` (the revision: "Host MUST use resources/read
to fetch the referenced resource URI") and takes its security settings from the
``_meta.ui`` of the content it read (falling back on the listed resource's).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ...codec import to_wire
from ..wire import MIME_TYPE, SCHEME, ui_meta, view_uri

if TYPE_CHECKING:
    from ...client.client import Client
    from ...types import Tool

#: The largest view (HTML) a host accepts, in bytes: it is held per preview and sent to
#: the browser whole.
MAX_VIEW_BYTES: Final = 4 * 1024 * 1024


class ViewError(ValueError):
    """The server's view cannot be shown: not a ``ui://`` URI, not HTML of the apps MIME
    type, too large, or its content is missing."""


@dataclass(frozen=True)
class View:
    """A fetched view: its URI, HTML and the ``_meta.ui`` settings it declared (``csp``,
    ``permissions``, ``domain``, ``prefers_border``)."""

    uri: str
    html: str
    csp: Mapping[str, Any] | None = None
    permissions: Mapping[str, Any] | None = None
    domain: str | None = None
    prefers_border: bool | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


def tools_with_views(client: Client, *, timeout: float | None = None) -> dict[str, str]:
    """``{tool name: view URI}`` for the server's tools that link to a view."""
    found: dict[str, str] = {}
    for tool in client.list_tools(timeout=timeout):
        uri = view_uri(tool)
        if uri is not None:
            found[tool.name] = uri
    return found


def find_tool(client: Client, name: str, *, timeout: float | None = None) -> Tool:
    """The listed tool ``name`` (``LookupError`` when the server lists none of that name)."""
    for tool in client.list_tools(timeout=timeout):
        if tool.name == name:
            return tool
    raise LookupError(f"the server lists no tool {name!r}")


def fetch_view(client: Client, uri: str, *, timeout: float | None = None) -> View:
    """Read the view at ``uri`` (``ViewError`` when it cannot be shown)."""
    if not uri.startswith(SCHEME):
        raise ViewError(f"{uri!r} is not a ui:// URI")
    result = client.read_resource(uri, timeout=timeout)
    for content in to_wire(result).get("contents") or []:
        if not isinstance(content, dict):
            continue
        mime = str(content.get("mimeType") or "").replace(" ", "").lower()
        if mime != MIME_TYPE:
            continue
        html = _html_of(content, uri)
        ui = ui_meta(content)
        border = ui.get("prefersBorder")
        domain = ui.get("domain")
        return View(uri, html, csp=_mapping(ui.get("csp")),
                    permissions=_mapping(ui.get("permissions")),
                    domain=domain if isinstance(domain, str) else None,
                    prefers_border=border if isinstance(border, bool) else None,
                    meta=dict(ui))
    raise ViewError(f"{uri!r} has no content of type {MIME_TYPE}")


def _html_of(content: Mapping[str, Any], uri: str) -> str:
    if isinstance(content.get("text"), str):
        text: str = content["text"]
        if len(text.encode()) > MAX_VIEW_BYTES:
            raise ViewError(f"the view {uri!r} is larger than {MAX_VIEW_BYTES} bytes")
        return text
    blob = content.get("blob")
    if isinstance(blob, str):
        if len(blob) > MAX_VIEW_BYTES * 4 // 3 + 4:
            raise ViewError(f"the view {uri!r} is larger than {MAX_VIEW_BYTES} bytes")
        try:
            return base64.b64decode(blob, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ViewError(f"the view {uri!r} is not base64 UTF-8 HTML: {exc}") from None
    raise ViewError(f"the view {uri!r} has neither text nor blob")


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


__all__ = ["MAX_VIEW_BYTES", "View", "ViewError", "fetch_view", "find_tool",
           "tools_with_views"]
