"""Prompts: templates of messages a user can pick, and completion of their arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..codec import custom, meta_field, optional, to_wire, wire_type
from ..display.notebook import DisplayablePrompt
from .common import Icon
from .content import content_from_wire


@wire_type
@dataclass
class PromptArgument:
    """One argument a prompt takes."""

    name: str
    title: str | None = optional()
    description: str | None = optional()
    required: bool | None = optional()


@wire_type
@dataclass
class Prompt:
    """A prompt as ``prompts/list`` describes it."""

    name: str
    title: str | None = optional()
    description: str | None = optional()
    arguments: list[PromptArgument] | None = optional()
    icons: list[Icon] | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class PromptMessage:
    """One message of a prompt: a role and one content block."""

    role: str
    content: Any = custom(decoder=content_from_wire, encoder=to_wire)


@wire_type
@dataclass
class GetPromptResult(DisplayablePrompt):
    """What ``prompts/get`` returns."""

    messages: list[PromptMessage] = field(default_factory=list)
    description: str | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class Completion:
    """Suggested values for an argument (at most 100)."""

    values: list[str] = field(default_factory=list)
    total: int | None = optional()
    has_more: bool | None = optional()
