"""How a name or URI carries the prefix of the server it belongs to: the one rule for a
server mounted into another (``Server.mount``, :mod:`mcpsync.server.mount`) and for a
client over several servers (``Client.from_config``, :mod:`mcpsync.hub`).

Why here, below both: the server and the client never import each other, and the same
tool must have the same name whether a parent server mounts ``calc`` or a notebook's hub
connects to it (``calc_add`` for the tool ``add``). The rules, both ways (``prefix`` None
or empty: everything unchanged):

* tools and prompts: ``name`` ↔ ``{prefix}_{name}``;
* resource URIs and URI templates: ``scheme://rest`` ↔ ``scheme://{prefix}/rest`` (the
  prefix becomes the first path segment after the first ``://``, so ``file:///x`` is
  ``file://{prefix}//x``); a URI with no ``://`` (``urn:…``, ``mailto:…``) is left as
  it is, and reading it asks each server in order.

Pure functions over strings and wire dicts.
"""

from __future__ import annotations

import re
from typing import Any

#: What a prefix may be made of: a name that stays one token in a tool name and one path
#: segment in a URI.
PREFIX = re.compile(r"[A-Za-z0-9_.-]+")


def name_out(prefix: str | None, name: str) -> str:
    """A tool's or prompt's name as the prefixed side lists it."""
    return f"{prefix}_{name}" if prefix else name


def name_in(prefix: str | None, name: str) -> str | None:
    """The server's own name behind a prefixed name; None when it is not prefixed so."""
    if not prefix:
        return name
    head = prefix + "_"
    return name[len(head):] if name.startswith(head) and len(name) > len(head) else None


def uri_out(prefix: str | None, uri: str) -> str:
    """A resource URI (or URI template) as the prefixed side lists it."""
    scheme, sep, rest = uri.partition("://")
    return f"{scheme}://{prefix}/{rest}" if prefix and sep else uri


def uri_in(prefix: str | None, uri: str) -> str | None:
    """The server's own URI behind a prefixed URI; None when it is not prefixed so."""
    scheme, sep, rest = uri.partition("://")
    if not prefix or not sep:
        return uri
    head = prefix + "/"
    return f"{scheme}://{rest[len(head):]}" if rest.startswith(head) else None


def content_out(prefix: str | None, block: Any) -> Any:
    """A wire content block with the URI of a resource link or embedded resource
    prefixed, so that it can be read through the prefixed side."""
    if not prefix or not isinstance(block, dict):
        return block
    if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
        return {**block, "uri": uri_out(prefix, block["uri"])}
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict) and isinstance(
            resource.get("uri"), str):
        return {**block, "resource": {**resource, "uri": uri_out(prefix, resource["uri"])}}
    return block


def view_out(prefix: str | None, tool: Any) -> Any:
    """A wire tool with the URI of the view it links to prefixed (MCP Apps:
    ``_meta.ui.resourceUri`` and the flat ``_meta["ui/resourceUri"]``), so that the
    prefixed side reads the view the tool names."""
    meta = tool.get("_meta") if isinstance(tool, dict) else None
    changed = view_meta_out(prefix, meta)
    return {**tool, "_meta": changed} if changed is not meta else tool


def view_meta_out(prefix: str | None, meta: Any) -> Any:
    """A tool's ``_meta`` with its view link prefixed (see :func:`view_out`): the one rule
    for a wire tool (a mount) and a typed one (a hub's ``Tool.meta``). ``meta`` itself
    when there is nothing to change."""
    if not prefix or not isinstance(meta, dict):
        return meta
    ui = meta.get("ui")
    changed = dict(meta)
    if isinstance(ui, dict) and isinstance(ui.get("resourceUri"), str):
        changed["ui"] = {**ui, "resourceUri": uri_out(prefix, ui["resourceUri"])}
    if isinstance(meta.get("ui/resourceUri"), str):
        changed["ui/resourceUri"] = uri_out(prefix, meta["ui/resourceUri"])
    return changed if changed != meta else meta


__all__ = ["PREFIX", "content_out", "name_in", "name_out", "uri_in", "uri_out", "view_meta_out",
           "view_out"]
