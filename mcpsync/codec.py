"""The one place that knows how wire types are declared and converted.

Types in :mod:`mcpsync.types` are plain dataclasses declared with :func:`wire_type`. This
module turns them into wire dicts and back: camelCase on the wire, ``meta`` ↔ ``_meta``,
absent optionals omitted (never ``null``), unknown fields on input ignored, and content
blocks decoded by their ``type`` discriminator.

The declarations are dataclasses-json's: each field's settings sit in its metadata under
``"dataclasses_json"`` in that library's layout (``exclude``, ``encoder``, ``decoder``, a
``letter_case`` override for a renamed field), and every wire type has the
``to_dict``/``from_dict``/``to_json``/``from_json`` methods its ``dataclass_json`` decorator
gives. But the library is not imported to *use* them: the conversions below are compiled
from those settings once per class, and importing dataclasses-json (marshmallow behind it)
costs a server's cold start about 0.2 s for nothing it would do here. Applying
``dataclasses_json.dataclass_json`` to a wire type yourself still works the same way.

Everything above this module calls :func:`to_wire` / :func:`from_wire` and never imports
dataclasses-json itself.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: The metadata key of a field's settings (dataclasses-json's).
_SETTINGS = "dataclasses_json"
#: Set on every class :func:`wire_type` declared.
_WIRE_MARK = "__mcpsync_wire__"


def _is_none(value: object) -> bool:
    return value is None


def _camel(name: str) -> str:
    """``mime_type`` → ``mimeType``: dataclasses-json's ``LetterCase.CAMEL`` for the
    snake_case names of Python fields (checked against it in the tests)."""
    head, *rest = re.split(r"_+", name)
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire_type(cls: type[T]) -> type[T]:
    """Declare a dataclass as a wire type: camelCase keys, unknown input keys ignored."""
    setattr(cls, _WIRE_MARK, True)
    cls.dataclass_json_config = {"letter_case": _camel}  # type: ignore[attr-defined]

    def to_dict(self: Any, encode_json: bool = False) -> dict[str, Any]:
        return to_wire(self)  # type: ignore[no-any-return]

    def to_json(self: Any, **kwargs: Any) -> str:
        return json.dumps(to_wire(self), **kwargs)

    def from_dict(klass: type[T], kvs: Any, *, infer_missing: bool = False) -> T:
        return from_wire(klass, kvs)

    def from_json(klass: type[T], text: str | bytes, **kwargs: Any) -> T:
        return from_wire(klass, json.loads(text, **kwargs))

    for name, method in (("to_dict", to_dict), ("to_json", to_json)):
        if name not in cls.__dict__:
            setattr(cls, name, method)
    if "from_dict" not in cls.__dict__:
        cls.from_dict = classmethod(from_dict)  # type: ignore[attr-defined]
    if "from_json" not in cls.__dict__:
        cls.from_json = classmethod(from_json)  # type: ignore[attr-defined, arg-type]
    return cls


def _settings(*, exclude: Callable[[Any], bool] | None = None, field_name: str | None = None,
              decoder: Callable[[Any], Any] | None = None,
              encoder: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """A field's metadata in dataclasses-json's layout (what its ``config()`` returns)."""
    settings: dict[str, Any] = {}
    if encoder is not None:
        settings["encoder"] = encoder
    if decoder is not None:
        settings["decoder"] = decoder
    if field_name is not None:
        settings["letter_case"] = lambda _name, _wire=field_name: _wire
    if exclude is not None:
        settings["exclude"] = exclude
    return {_SETTINGS: settings}


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
    whose value the generic rules cannot (a union of content blocks).
    """
    meta = _settings(exclude=omit, field_name=name, decoder=decoder, encoder=encoder)
    return dataclasses.field(default=default, metadata=meta)


def meta_field() -> Any:
    """The ``_meta`` field every spec object may carry; preserved verbatim."""
    return optional(name="_meta")


def custom(
    *, decoder: Callable[[Any], Any], encoder: Callable[[Any], Any], default_factory: Any = None
) -> Any:
    """A required field converted by hand (a list of content blocks)."""
    meta = _settings(decoder=decoder, encoder=encoder)
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
# is a loop over precomputed steps. A dataclass another library declared with
# ``dataclass_json`` (it has ``from_dict``) is converted by the same rules.

_ENCODERS: dict[type, Callable[[Any], Any] | None] = {}
_DECODERS: dict[type, Callable[[dict[str, Any]], Any] | None] = {}


def _is_wire(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls) and (
        hasattr(cls, _WIRE_MARK) or hasattr(cls, "from_dict"))


def _field_config(field: dataclasses.Field[Any]) -> tuple[str, dict[str, Any]]:
    settings = field.metadata.get(_SETTINGS, {})
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
