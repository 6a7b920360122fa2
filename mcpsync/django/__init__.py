"""Django integration: the MCP endpoint as a view in the URLconf, the site's users as MCP
principals, database connections handled on handler threads, each app's ``mcp.py``
discovered, the ``MCPSYNC`` setting, system checks and ``manage.py mcp``.

Add ``"mcpsync.django"`` to ``INSTALLED_APPS`` and a URL::

    from django.urls import path
    from mcpsync.django import mcp_endpoint

    urlpatterns = [path("mcp", mcp_endpoint())]

See docs/django.md. The names are imported lazily: this package is imported by Django's
app registry before the models are ready, and it needs no settings until used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .endpoint import Endpoint, mcp_endpoint
    from .site import autodiscover, get_server
    from .users import acting_as, current_request

_LAZY = {
    "Endpoint": "endpoint",
    "mcp_endpoint": "endpoint",
    "autodiscover": "site",
    "get_server": "site",
    "acting_as": "users",
    "current_request": "users",
}

__all__ = ["Endpoint", "acting_as", "autodiscover", "current_request", "get_server",
           "mcp_endpoint"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpsync.django' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
