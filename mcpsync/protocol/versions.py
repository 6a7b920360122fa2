"""Every protocol revision mcpsync speaks, and what each one allows: ONE table.

Code that behaves differently per revision asks ``features(version).<flag>`` instead of
comparing version strings. Adding a revision means adding a row here.

The wire names of the 2026-07-28 per-request envelope (its ``_meta`` keys,
:func:`is_stateless`) and of subscriptions live here too: what tells that era's messages
apart, shared by the server, the client and the transports (sans-IO: names and pure
functions only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class Features:
    """What one protocol revision allows or requires."""

    version: str
    #: "modern" (stateless, per-request envelope) or "legacy" (initialize handshake).
    era: str
    #: JSON-RPC batches may be received (2025-03-26 only).
    batching: bool
    #: ``elicitation/create`` exists (form mode).
    elicitation: bool
    #: URL-mode elicitation, ``elicitationId`` and -32042 exist.
    url_elicitation: bool
    #: ``structuredContent`` and ``outputSchema`` exist on tools.
    structured_output: bool
    #: ``structuredContent`` may be any JSON value (else: an object).
    structured_any: bool
    #: ``title`` fields and ``resource_link`` content exist.
    titles: bool
    #: ``icons`` exist on tools, prompts, resources, implementations.
    icons: bool
    #: Sampling requests may carry ``tools``/``toolChoice``.
    sampling_tools: bool
    #: The ``audio`` content type exists.
    audio: bool
    #: Tool annotations exist.
    tool_annotations: bool
    #: Experimental tasks v1 (``tasks/*`` + ``params.task``).
    tasks_v1: bool
    #: HTTP requests carry ``MCP-Protocol-Version``.
    http_version_header: bool
    #: Transport: "sse" (2024-11-05 HTTP+SSE) or "streamable".
    http_transport: str
    #: The JSON Schema dialect assumed when ``$schema`` is absent.
    default_schema_dialect: str
    #: The error code for resources/read of a missing resource.
    resource_not_found_code: int
    #: SSE priming events and server-closed streams the client polls back (SEP-1699).
    sse_polling: bool = False


_DRAFT7 = "http://json-schema.org/draft-07/schema#"
_2020_12 = "https://json-schema.org/draft/2020-12/schema"

MODERN: Final = "2026-07-28"
LATEST_LEGACY: Final = "2025-11-25"

_TABLE: Final[dict[str, Features]] = {
    f.version: f
    for f in (
        Features("2026-07-28", "modern", batching=False, elicitation=True, url_elicitation=True,
                 structured_output=True, structured_any=True, titles=True, icons=True,
                 sampling_tools=True, audio=True, tool_annotations=True, tasks_v1=False,
                 http_version_header=True, http_transport="streamable",
                 default_schema_dialect=_2020_12, resource_not_found_code=-32602),
        Features("2025-11-25", "legacy", batching=False, elicitation=True, url_elicitation=True,
                 structured_output=True, structured_any=False, titles=True, icons=True,
                 sampling_tools=True, audio=True, tool_annotations=True, tasks_v1=True,
                 http_version_header=True, http_transport="streamable",
                 default_schema_dialect=_2020_12, resource_not_found_code=-32002,
                 sse_polling=True),
        Features("2025-06-18", "legacy", batching=False, elicitation=True, url_elicitation=False,
                 structured_output=True, structured_any=False, titles=True, icons=False,
                 sampling_tools=False, audio=True, tool_annotations=True, tasks_v1=False,
                 http_version_header=True, http_transport="streamable",
                 default_schema_dialect=_DRAFT7, resource_not_found_code=-32002),
        Features("2025-03-26", "legacy", batching=True, elicitation=False, url_elicitation=False,
                 structured_output=False, structured_any=False, titles=False, icons=False,
                 sampling_tools=False, audio=True, tool_annotations=True, tasks_v1=False,
                 http_version_header=False, http_transport="streamable",
                 default_schema_dialect=_DRAFT7, resource_not_found_code=-32002),
        Features("2024-11-05", "legacy", batching=False, elicitation=False, url_elicitation=False,
                 structured_output=False, structured_any=False, titles=False, icons=False,
                 sampling_tools=False, audio=False, tool_annotations=False, tasks_v1=False,
                 http_version_header=False, http_transport="sse",
                 default_schema_dialect=_DRAFT7, resource_not_found_code=-32002),
    )
}

#: Every revision, newest first.
ALL_VERSIONS: Final = tuple(sorted(_TABLE, reverse=True))
#: Handshake-era revisions, newest first: what ``initialize`` may negotiate.
LEGACY_VERSIONS: Final = tuple(v for v in ALL_VERSIONS if _TABLE[v].era == "legacy")
#: Stateless-era revisions, newest first.
MODERN_VERSIONS: Final = tuple(v for v in ALL_VERSIONS if _TABLE[v].era == "modern")


def features(version: str) -> Features:
    """The row for ``version``; ``KeyError`` for a revision mcpsync does not speak."""
    return _TABLE[version]


def negotiate_legacy(requested: object, supported: tuple[str, ...] = LEGACY_VERSIONS) -> str:
    """The server's answer to ``initialize``: the client's version if we speak it, else our latest.

    The spec leaves the client to disconnect when it cannot use our answer.
    """
    if isinstance(requested, str) and requested in supported:
        return requested
    return supported[0]


# -- the 2026-07-28 per-request envelope and subscriptions --

#: ``_meta`` keys of the per-request envelope (requests) and of results.
META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
#: ``_meta`` key tagging every notification of a ``subscriptions/listen`` stream.
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
UPDATED: Final = "notifications/resources/updated"

#: Subscription filter field -> the list that it follows.
LIST_FIELDS: Final = {"toolsListChanged": "tools", "promptsListChanged": "prompts",
                      "resourcesListChanged": "resources"}


def uri_covers(subscribed: str, uri: str) -> bool:
    """Whether an update of ``uri`` concerns a subscription to ``subscribed``: the same URI
    or a sub-resource of it (``file:///dir`` covers ``file:///dir/a.txt``)."""
    if uri == subscribed:
        return True
    if not uri.startswith(subscribed):
        return False
    return subscribed.endswith("/") or uri[len(subscribed)] in "/?#"


def is_stateless(params: Any) -> bool:
    """Whether a message's ``params`` carry the 2026-07-28 per-request envelope."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_VERSION in meta
