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
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from dataclasses_json import LetterCase, Undefined, config, dataclass_json

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
    omit: Callable[[Any], bool] = _is_none,
) -> Any:
    """A dataclass field that is left off the wire while it is ``None`` (or while ``omit``
    says so: a flag left off while ``False``).

    ``name`` overrides the wire name (``_meta``); ``decoder``/``encoder`` convert a field
    whose value dataclasses-json cannot (a union of content blocks).
    """
    meta = config(exclude=omit, field_name=name, decoder=decoder, encoder=encoder)
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
    encoder = _encoder_for(type(value))
    if encoder is not None:
        return encoder(value)
    if isinstance(value, list):
        return [to_wire(item) for item in value]
    if isinstance(value, dict):
        return {key: to_wire(item) for key, item in value.items()}
    return value


def from_wire(cls: type[T], data: Any) -> T:
    """Decode a wire dict into ``cls``; raises ``ValueError`` when it does not fit."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    decoder = _decoder_for(cls)
    if decoder is None:
        raise TypeError(f"{cls.__name__} is not a wire type")
    try:
        return decoder(data)  # type: ignore[no-any-return]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{cls.__name__}: {exc}") from exc


# -- compiled codecs -----------------------------------------------------------------------
#
# dataclasses-json resolves type hints and walks its configuration on every call, which
# costs about a millisecond per CallToolResult: more than the whole round trip. The
# functions below read the same configuration (field names, exclude, encoder, decoder) once
# per class and compile a plan, so the declarations stay dataclasses-json's and the hot path
# is a loop over precomputed steps.

_ENCODERS: dict[type, Callable[[Any], Any] | None] = {}
_DECODERS: dict[type, Callable[[dict[str, Any]], Any] | None] = {}
_camel: Callable[[str], str] = LetterCase.CAMEL


def _is_wire(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls) and hasattr(cls, "from_dict")


def _field_config(field: dataclasses.Field[Any]) -> tuple[str, dict[str, Any]]:
    settings = field.metadata.get("dataclasses_json", {})
    rename = settings.get("letter_case")
    return (rename(field.name) if rename is not None else _camel(field.name)), settings


def _encoder_for(cls: type) -> Callable[[Any], Any] | None:
    try:
        return _ENCODERS[cls]
    except KeyError:
        pass
    if not _is_wire(cls):
        _ENCODERS[cls] = None
        return None
    steps = []
    for field in dataclasses.fields(cls):
        name, settings = _field_config(field)
        steps.append((field.name, name, settings.get("exclude"), settings.get("encoder")))

    def encode(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, name, exclude, custom in steps:
            item = getattr(value, attr)
            if exclude is not None and exclude(item):
                continue
            out[name] = custom(item) if custom is not None else to_wire(item)
        return out

    _ENCODERS[cls] = encode
    return encode


def _value_decoder(hint: Any) -> Callable[[Any], Any] | None:
    """How to decode a field of type ``hint``: nested wire types and lists of them."""
    if _is_wire(hint):
        return lambda data: from_wire(hint, data) if isinstance(data, dict) else data
    if hint is float:
        return lambda data: float(data) if type(data) is int else data
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        wire = [arg for arg in args if arg is not type(None)]
        if len(wire) == 1:
            return _value_decoder(wire[0])
        return None
    if origin is list and args:
        inner = _value_decoder(args[0])
        if inner is not None:
            return lambda data: [inner(item) for item in data] if isinstance(data, list) else data
    return None


def _decoder_for(cls: type) -> Callable[[dict[str, Any]], Any] | None:
    try:
        return _DECODERS[cls]
    except KeyError:
        pass
    if not _is_wire(cls):
        _DECODERS[cls] = None
        return None
    hints = typing.get_type_hints(cls)
    steps = []
    for field in dataclasses.fields(cls):
        name, settings = _field_config(field)
        required = (field.default is dataclasses.MISSING
                    and field.default_factory is dataclasses.MISSING)
        convert = settings.get("decoder") or _value_decoder(hints.get(field.name))
        steps.append((field.name, name, required, convert))

    def decode(data: dict[str, Any]) -> Any:
        kwargs: dict[str, Any] = {}
        for attr, name, required, convert in steps:
            if name in data:
                item = data[name]
                kwargs[attr] = convert(item) if convert is not None and item is not None else item
            elif required:
                raise KeyError(f"missing required field {name!r}")
        return cls(**kwargs)

    _DECODERS[cls] = decode
    return decode
