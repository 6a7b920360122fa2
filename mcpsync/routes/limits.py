"""The bounds on an OpenAPI document and on the calls made from it: :class:`RouteLimits`.

A document may come from anywhere (a URL, a third party's package), so everything read
from it is bounded before it is trusted: its size, how many operations it declares, how
deep and how large each tool's schema grows once its ``$ref``\\ s are gathered, and how
long a chain of references may be. Past a bound the build fails with an
:class:`~mcpsync.routes.document.OpenAPIError` naming the bound, never a hang or a
``RecursionError``. The answers of the API are bounded too (a call reads at most
``max_response_bytes`` of a body). docs/limits.md lists each with its default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Bytes of an error answer's body quoted in the ``isError`` result.
ERROR_EXCERPT_BYTES: Final = 2048


@dataclass(frozen=True)
class RouteLimits:
    """The bounds of one generated server (see the module doc)."""

    #: Bytes of a document read from a file or a URL.
    max_document_bytes: int = 16 * 1024 * 1024
    #: Operations a document may declare (every one is counted, excluded ones included).
    max_operations: int = 2000
    #: Schema objects one tool's input or output schema may hold, ``$defs`` included.
    max_schema_nodes: int = 20_000
    #: How deep one schema may nest (objects and arrays of the document, counted alike).
    max_depth: int = 64
    #: ``$ref`` hops followed to reach a parameter, body or response.
    max_ref_chain: int = 32
    #: Bytes of an API's answer read for one call (more: an ``isError`` result).
    max_response_bytes: int = 8 * 1024 * 1024
    #: Bytes of an error answer quoted in the ``isError`` result.
    error_excerpt_bytes: int = ERROR_EXCERPT_BYTES
    #: Characters of a tool's description (summary and description); longer is cut.
    max_description_chars: int = 4096
    #: Seconds to fetch a document from a URL, all of it.
    fetch_timeout: float = 30.0
