"""The one place that knows dataclasses-json.

Types in :mod:`mcpsync.types` are plain dataclasses declared with :func:`wire_type`. This
module turns them into wire dicts and back: camelCase on the wire, ``meta`` ↔ ``_meta``,
absent optionals omitted (never ``null``), unknown fields on input ignored, and content
blocks decoded by their ``type`` discriminator.

Everything above this module calls :func:`to_wire` / :func:`from_wire` and never imports
dataclasses-json itself, so the library behind it can change without touching the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from dataclasses_json import DataClassJsonMixin, LetterCase, Undefined, config, dataclass_json

T = TypeVar("T")


def _is_none(value: object) -> bool:
    return value is None


def wire_type(cls: type[T]) -> type[T]:
    """Declare a dataclass as a wire type: camelCase keys, unknown input keys ignored."""
    return dataclass_json(letter_case=LetterCase.CAMEL, undefined=Undefined.EXCLUDE)(cls)  # type: ignore[call-overload, no-any-return]


def optional(
    default: Any = None,
    *,
    name: str | None = None,
    decoder: Callable[[Any], Any] | None = None,
    encoder: Callable[[Any], Any] | None = None,
) -> Any:
    """A dataclass field that is left off the wire while it is ``None``.

    ``name`` overrides the wire name (``_meta``); ``decoder``/``encoder`` convert a field
    whose value dataclasses-json cannot (a union of content blocks).
    """
    meta = config(exclude=_is_none, field_name=name, decoder=decoder, encoder=encoder)
    return dataclasses.field(default=default, metadata=meta)


def meta_field() -> Any:
    """The ``_meta`` field every spec object may carry; preserved verbatim."""
    return optional(name="_meta")


def custom(
    *, decoder: Callable[[Any], Any], encoder: Callable[[Any], Any], default_factory: Any = None
) -> Any:
    """A required field converted by hand (a list of content blocks)."""
    meta = config(decoder=decoder, encoder=encoder)
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(metadata=meta)


def to_wire(value: Any) -> Any:
    """Encode a wire type (or a list/dict of them) to JSON-ready Python values."""
    if isinstance(value, DataClassJsonMixin) or hasattr(value, "to_dict"):
        return value.to_dict(encode_json=False)
    if isinstance(value, list):
        return [to_wire(item) for item in value]
    if isinstance(value, dict):
        return {key: to_wire(item) for key, item in value.items()}
    return value


def from_wire(cls: type[T], data: Any) -> T:
    """Decode a wire dict into ``cls``; raises ``ValueError`` when it does not fit."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    try:
        return cls.from_dict(data, infer_missing=True)  # type: ignore[attr-defined, no-any-return]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{cls.__name__}: {exc}") from exc
