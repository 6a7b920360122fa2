"""What a server may ask of a client: elicitation, sampling, roots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..codec import custom, meta_field, optional, to_wire, wire_type
from .content import content_from_wire


def _content_one_or_many(data: Any) -> Any:
    if isinstance(data, list):
        return [content_from_wire(item) for item in data]
    return content_from_wire(data)


@wire_type
@dataclass
class ElicitRequestParams:
    """``elicitation/create`` as the client's handler receives it.

    ``mode`` is ``"form"`` (answer with ``content`` matching ``requested_schema``) or
    ``"url"`` (ask the user to open ``url``; accepting is consent, not completion).
    """

    message: str
    mode: str | None = optional()
    requested_schema: dict[str, Any] | None = optional()
    url: str | None = optional()
    elicitation_id: str | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class ElicitResult:
    """The user's answer: ``accept`` (with ``content`` for forms), ``decline`` or ``cancel``.

    On the server, ``data`` holds the content decoded into the dataclass that was asked for.
    """

    action: str
    content: dict[str, Any] | None = optional()
    meta: dict[str, Any] | None = meta_field()

    def __post_init__(self) -> None:
        self.data: Any = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@wire_type
@dataclass
class SamplingMessage:
    """One message of a sampling conversation."""

    role: str
    content: Any = custom(decoder=_content_one_or_many, encoder=to_wire)
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class CreateMessageRequestParams:
    """``sampling/createMessage`` as the client's handler receives it."""

    messages: list[SamplingMessage] = field(default_factory=list)
    max_tokens: int = 0
    system_prompt: str | None = optional()
    temperature: float | None = optional()
    stop_sequences: list[str] | None = optional()
    model_preferences: dict[str, Any] | None = optional()
    include_context: str | None = optional()
    metadata: dict[str, Any] | None = optional()
    tools: list[dict[str, Any]] | None = optional()
    tool_choice: dict[str, Any] | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class CreateMessageResult:
    """The model's answer to a sampling request."""

    role: str
    content: Any = custom(decoder=_content_one_or_many, encoder=to_wire)
    model: str = ""
    stop_reason: str | None = optional()
    meta: dict[str, Any] | None = meta_field()

    @property
    def text(self) -> str:
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "\n".join(b.text for b in blocks if getattr(b, "type", None) == "text")
