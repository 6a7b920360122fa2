"""Your routes are tools: an OpenAPI document, or a WSGI application called in process,
made into an MCP server (``Server.from_openapi``, ``Server.from_wsgi``; docs/routes.md).

The parts: :mod:`.document` (loading, references, schemas), :mod:`.operations` (what
each operation takes and answers), :mod:`.maps` (route maps, names), :mod:`.calls` (the
HTTP request and the tool result), :mod:`.outbound` (``requests`` or in process),
:mod:`.frameworks` (a Flask or Django app's document), :mod:`.build` (registering),
:mod:`.catalogue` (transforming tools, and the search mode for large catalogues).
"""

from __future__ import annotations

from .api import fill_from_openapi, fill_from_wsgi
from .build import Generated
from .catalogue import ArgTransform, enable_search, transform_tool
from .document import Document, OpenAPIError, load_document
from .frameworks import AppDocument
from .limits import RouteLimits
from .maps import DEFAULT_ROUTE_MAPS, RouteMap
from .operations import Operation, operations_of

__all__ = [
    "DEFAULT_ROUTE_MAPS",
    "AppDocument",
    "ArgTransform",
    "Document",
    "Generated",
    "OpenAPIError",
    "Operation",
    "RouteLimits",
    "RouteMap",
    "enable_search",
    "fill_from_openapi",
    "fill_from_wsgi",
    "load_document",
    "operations_of",
    "transform_tool",
]
