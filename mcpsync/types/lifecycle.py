"""The handshake era's ``initialize`` exchange."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..codec import meta_field, optional, wire_type
from .common import Implementation


@wire_type
@dataclass
class InitializeResult:
    """What the server answers to ``initialize``.

    ``capabilities`` stays a plain dict: it is an open-ended map that extensions add to.
    """

    protocol_version: str
    server_info: Implementation
    capabilities: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = optional()
    meta: dict[str, Any] | None = meta_field()
