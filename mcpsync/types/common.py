"""Small objects shared across the spec: implementation info, icons, annotations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..codec import meta_field, optional, wire_type


@wire_type
@dataclass
class Icon:
    """An icon a client may show; ``src`` is an https: or data: URI."""

    src: str
    mime_type: str | None = optional()
    sizes: list[str] | None = optional()
    theme: str | None = optional()


@wire_type
@dataclass
class Implementation:
    """Who a peer says it is (``serverInfo`` / ``clientInfo``): for display, never for trust."""

    name: str
    version: str
    title: str | None = optional()
    description: str | None = optional()
    icons: list[Icon] | None = optional()
    website_url: str | None = optional()


@wire_type
@dataclass
class Annotations:
    """Hints on content: who it is for, how important, when it changed."""

    audience: list[str] | None = optional()
    priority: float | None = optional()
    last_modified: str | None = optional()


@wire_type
@dataclass
class Progress:
    """One ``notifications/progress`` as the caller sees it."""

    progress_token: str | int
    progress: float
    total: float | None = optional()
    message: str | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class LogMessage:
    """One ``notifications/message`` (a log line sent by the server)."""

    level: str
    data: Any = None
    logger: str | None = optional()
    meta: dict[str, Any] | None = meta_field()
