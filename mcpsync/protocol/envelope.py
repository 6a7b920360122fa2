"""Wire names of the 2026-07-28 per-request envelope and of subscriptions, shared by the
server, the client and the transports (sans-IO: names and pure functions only)."""

from __future__ import annotations

from typing import Any, Final

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
