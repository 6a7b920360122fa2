"""JSON Schema (2020-12) from Python type hints, with a decoder per hint.

A tool's parameters and return type, and an elicitation's requested fields, are described
to the peer as JSON Schema; the same walk over the annotation yields a decoder that turns
the validated JSON value back into the annotated Python type (a dataclass, an enum, a
tuple). Kept apart from the call path in :mod:`.typed` so the schema rules can be read, and
reused by :mod:`.reverse`, without the binding machinery.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Union

from ..codec import to_wire
from .fastcheck import SchemaValidator
from .schema_extras import (
    apply_constraint,
    is_constraint,
    is_model,
    is_model_instance,
    model_schema,
)

if TYPE_CHECKING:
    import datetime
    import decimal

Decoder = Callable[[Any], Any]
_NONE_TYPE = type(None)


def _identity(value: Any) -> Any:
    return value


class SchemaBuilder:
    """Turns annotations into (schema, decoder) pairs.

    ``defs`` collects the ``$defs`` of pydantic models met on the way: the caller puts them
    at the root of the schema it assembles. ``mode`` is pydantic's: ``"serialization"`` for
    a return type, ``"validation"`` for arguments.
    """

    def __init__(self, mode: str = "validation") -> None:
        self.defs: dict[str, Any] = {}
        self.mode = mode

    def build(self, hint: Any) -> tuple[dict[str, Any], Decoder | None]:
        """The schema for ``hint`` and a decoder (``None`` when values pass through as-is)."""
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Annotated:
            return self._annotated(args)
        if hint is Any or hint is inspect.Parameter.empty or hint is object:
            return {}, None
        if hint is _NONE_TYPE or hint is None:
            return {"type": "null"}, None
        if hint is bool:
            return {"type": "boolean"}, None
        if hint is int:
            return {"type": "integer"}, _to_int
        if hint is float:
            return {"type": "number"}, _to_float
        if hint is str:
            return {"type": "string"}, None
        special = _special(hint)
        if special is not None:
            return special
        if is_model(hint):
            return model_schema(hint, self.defs, self.mode)
        if origin in (Union, types.UnionType):
            return self._union(args)
        if origin is Literal:
            return _literal_schema(args), None
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            values = [member.value for member in hint]
            schema = _literal_schema(tuple(values))
            return schema, _enum_decoder(hint)
        if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set, frozenset):
            return self._sequence(origin or hint, args)
        if origin is dict or hint is dict:
            return self._mapping(args)
        if _is_namedtuple(hint):
            return self._namedtuple(hint)
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return self._dataclass(hint)
        if typing.is_typeddict(hint):
            return self._typeddict(hint)
        raise TypeError(f"cannot build a JSON Schema for annotation {hint!r}")

    def _annotated(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Decoder | None]:
        """``Annotated[T, "text"]`` describes; constraint metadata (annotated-types, pydantic's
        ``Field``) constrains, in the schema where it can and in the decoder otherwise."""
        schema, decoder = self.build(args[0])
        checks: list[Callable[[Any], None]] = []
        for extra in args[1:]:
            if isinstance(extra, str):
                schema = {**schema, "description": extra}
            elif is_constraint(extra):
                schema = apply_constraint(schema, extra, checks)
        if not checks:
            return schema, decoder
        inner = decoder or _identity

        def checked(value: Any) -> Any:
            decoded = inner(value)
            for check in checks:
                check(decoded)
            return decoded

        return schema, checked

    def _union(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Decoder | None]:
        members = [self.build(arg) for arg in args]
        non_null = [(s, d) for (s, d), a in zip(members, args, strict=False) if a is not _NONE_TYPE]
        nullable = len(non_null) < len(members)
        if len(non_null) == 1:
            schema, decoder = non_null[0]
            if nullable:
                schema = {"anyOf": [schema, {"type": "null"}]}
                if decoder is not None:
                    inner = decoder
                    decoder = lambda v: None if v is None else inner(v)
            return schema, decoder
        schemas = [s for s, _ in members]
        if any(d is not None for _, d in members):
            # Decode with the first member whose schema accepts the value. A member may
            # refer to the $defs collected so far (a pydantic model with a nested model):
            # they are all known by now, and travel with it.
            checks = [(SchemaValidator({**s, "$defs": dict(self.defs)} if self.defs else s), d)
                      for s, d in members]

            def decode(value: Any) -> Any:
                for check, dec in checks:
                    if check.is_valid(value):
                        return dec(value) if dec is not None else value
                return value

            return {"anyOf": schemas}, decode
        return {"anyOf": schemas}, None

    def _sequence(self, kind: Any, args: tuple[Any, ...]) -> tuple[dict[str, Any], Decoder | None]:
        schema: dict[str, Any] = {"type": "array"}
        decoder: Decoder | None = None
        if kind is tuple and args and args[-1] is not Ellipsis:
            parts = [self.build(arg) for arg in args]
            schema["prefixItems"] = [s for s, _ in parts]
            schema["minItems"] = schema["maxItems"] = len(parts)
            decs = [d or _identity for _, d in parts]
            return schema, lambda v: tuple(d(item) for d, item in zip(decs, v, strict=False))
        item_schema, item_decoder = self.build(args[0]) if args else ({}, None)
        if item_schema:
            schema["items"] = item_schema
        if kind in (set, frozenset):
            schema["uniqueItems"] = True
        if item_decoder is not None or kind is not list:
            dec = item_decoder or _identity
            make: Callable[[Any], Any] = list if kind is list else kind
            decoder = lambda v: make(dec(item) for item in v)
        return schema, decoder

    def _mapping(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Decoder | None]:
        """``dict[K, V]``: JSON keys are strings, so ``K`` is described by ``propertyNames``
        and each key decoded to ``K`` (``dict[int, str]`` gets ``{1: ...}``)."""
        value_schema, value_decoder = self.build(args[1]) if len(args) == 2 else ({}, None)
        mapping: dict[str, Any] = {"type": "object"}
        if value_schema:
            mapping["additionalProperties"] = value_schema
        key_decoder: Decoder | None = None
        if args and args[0] not in (str, Any):
            key_schema, key_decoder = self._key(args[0])
            mapping["propertyNames"] = key_schema
        if value_decoder is None and key_decoder is None:
            return mapping, None
        vd = value_decoder or _identity
        kd = key_decoder or _identity
        return mapping, lambda v: {kd(k): vd(item) for k, item in v.items()}

    def _key(self, hint: Any) -> tuple[dict[str, Any], Decoder | None]:
        if hint is int:
            return {"pattern": r"^-?[0-9]+$"}, int
        if hint is float:
            return {"pattern": r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"}, float
        schema, decoder = self.build(hint)
        if schema.get("type") != "string":
            raise TypeError(f"a dict key must be str, int, float or a string type, "
                            f"not {hint!r}")
        return {k: v for k, v in schema.items() if k != "type"}, decoder

    def _namedtuple(self, cls: type[Any]) -> tuple[dict[str, Any], Decoder | None]:
        """A ``NamedTuple`` is a fixed-length array, as the official SDK (pydantic) has it;
        trailing fields with defaults may be left out."""
        hints = typing.get_type_hints(cls, include_extras=True)
        defaults = getattr(cls, "_field_defaults", {})
        parts = []
        for name in cls._fields:
            schema, decoder = self.build(hints.get(name, Any))
            if name in defaults:
                schema = dict(schema)
                _set_default(schema, defaults[name])
            parts.append((schema, decoder or _identity))
        schema = {"type": "array", "prefixItems": [p for p, _ in parts],
                  "minItems": len(cls._fields) - len(defaults), "maxItems": len(parts)}
        decoders = [d for _, d in parts]
        return schema, lambda v: cls(*(d(item) for d, item in zip(decoders, v, strict=False)))

    def _dataclass(self, cls: type[Any]) -> tuple[dict[str, Any], Decoder | None]:
        hints = typing.get_type_hints(cls, include_extras=True)
        properties: dict[str, Any] = {}
        required: list[str] = []
        decoders: dict[str, Decoder] = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            schema, decoder = self.build(hints.get(f.name, Any))
            if f.default is not dataclasses.MISSING:
                _set_default(schema, f.default)
            elif f.default_factory is dataclasses.MISSING:
                required.append(f.name)
            properties[f.name] = schema
            if decoder is not None:
                decoders[f.name] = decoder
        schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required

        def decode(value: Any) -> Any:
            kwargs = {k: (decoders[k](v) if k in decoders else v) for k, v in value.items()
                      if k in properties}
            return cls(**kwargs)

        return schema, decode

    def _typeddict(self, cls: type[Any]) -> tuple[dict[str, Any], Decoder | None]:
        hints = typing.get_type_hints(cls, include_extras=True)
        properties: dict[str, Any] = {}
        decoders: dict[str, Decoder] = {}
        for key, hint in hints.items():
            properties[key], decoder = self.build(_strip_required(hint))
            if decoder is not None:
                decoders[key] = decoder
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = sorted(getattr(cls, "__required_keys__", set()))
        if required:
            schema["required"] = required
        if not decoders:
            return schema, None
        return schema, lambda v: {k: (decoders[k](x) if k in decoders else x) for k, x in v.items()}


def _strip_required(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    # typing.Required/NotRequired exist from Python 3.11 on.
    markers = tuple(m for m in (getattr(typing, "Required", None),
                                getattr(typing, "NotRequired", None)) if m is not None)
    if origin is not None and origin in markers:
        return typing.get_args(hint)[0]
    return hint


def _to_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _to_int(value: Any) -> Any:
    """JSON ``1.0`` is an integer to JSON Schema; the function gets ``int`` 1 (a fraction
    never gets here: the schema refuses it)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _is_namedtuple(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields")


def _parse_datetime(value: str) -> datetime.datetime:
    import datetime

    # Python 3.10's fromisoformat does not take the "Z" suffix RFC 3339 allows.
    return datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "zZ"
                                           and value else value)


def _parse_time(value: str) -> datetime.time:
    import datetime

    return datetime.time.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "zZ"
                                       and value else value)


def _parse_decimal(value: Any) -> decimal.Decimal:
    import decimal

    try:
        # str(float) is the shortest text that round-trips: 0.1 arrives as Decimal("0.1").
        number = decimal.Decimal(value if isinstance(value, str) else str(value))
    except decimal.InvalidOperation:
        raise ValueError(f"{value!r} is not a decimal number") from None
    if not number.is_finite():
        raise ValueError(f"{value!r} is not a finite decimal number")
    return number


def _parse_base64(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not valid base64: {exc}") from None


#: The modules whose types travel as strings (see :func:`_special`), in the order
#: :func:`_loaded` is asked for them.
_STRING_MODULES = ("datetime", "uuid", "pathlib", "decimal")


def _loaded(name: str) -> Any:
    """The module ``name`` if something imported it already, else None.

    Why not import it: a hint or a value of one of its types cannot exist before its module
    is imported, so asking only loaded modules decides exactly what importing them would,
    and a server whose tools use none of these types does not import them at start-up
    (together about 20 ms; see docs/benchmarks.md, cold start).
    """
    return sys.modules.get(name)


def _special(hint: Any) -> tuple[dict[str, Any], Decoder | None] | None:
    """Types sent as strings (dates, UUIDs, paths, bytes) and ``Decimal`` (a number or a
    string in, a string out: what the official SDK does, through pydantic)."""
    if not isinstance(hint, type):
        return None
    datetime, uuid, pathlib, decimal = (_loaded(name) for name in _STRING_MODULES)
    if datetime is not None and issubclass(hint, datetime.datetime):
        return {"type": "string", "format": "date-time"}, _strings(_parse_datetime)
    if datetime is not None and issubclass(hint, datetime.date):
        return {"type": "string", "format": "date"}, _strings(datetime.date.fromisoformat)
    if datetime is not None and issubclass(hint, datetime.time):
        return {"type": "string", "format": "time"}, _strings(_parse_time)
    if uuid is not None and issubclass(hint, uuid.UUID):
        return {"type": "string", "format": "uuid"}, _strings(uuid.UUID)
    if pathlib is not None and issubclass(hint, pathlib.PurePath):
        return {"type": "string", "format": "path"}, _strings(hint)
    if decimal is not None and issubclass(hint, decimal.Decimal):
        return {"anyOf": [{"type": "number"}, {"type": "string"}]}, _parse_decimal
    if issubclass(hint, (bytes, bytearray)):
        make: Callable[[Any], Any] = hint
        return ({"type": "string", "contentEncoding": "base64"},
                _strings(lambda v: make(_parse_base64(v))))
    return None


def _strings(parse: Callable[[str], Any]) -> Decoder:
    """A decoder for a string-typed value (validated as a string already)."""
    return lambda value: parse(value) if isinstance(value, str) else value


def to_json_value(value: Any) -> Any:
    """A Python value as plain JSON data: the encoding that matches :class:`SchemaBuilder`'s
    decoding (dates as ISO 8601, UUIDs, paths and decimals as strings, bytes as base64,
    dataclasses and named tuples field by field, enums by value). Anything else is left as
    it is, for the JSON encoder to accept or refuse."""
    if isinstance(value, enum.Enum):
        return to_json_value(value.value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return to_wire(value)
        return {f.name: to_json_value(getattr(value, f.name))
                for f in dataclasses.fields(value)}
    if is_model_instance(value):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {_key_text(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json_value(v) for v in value]
    datetime, uuid, pathlib, decimal = (_loaded(name) for name in _STRING_MODULES)
    if datetime is not None and isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if any(module is not None and isinstance(value, getattr(module, kind)) for module, kind
           in ((uuid, "UUID"), (pathlib, "PurePath"), (decimal, "Decimal"))):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def _key_text(key: Any) -> str:
    encoded = to_json_value(key)
    return encoded if isinstance(encoded, str) else json.dumps(encoded)


def _enum_decoder(cls: type[enum.Enum]) -> Decoder:
    return lambda value: cls(value)


def _literal_schema(values: tuple[Any, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": list(values)}
    kinds = {type(v) for v in values}
    names = {str: "string", int: "integer", bool: "boolean", float: "number"}
    if len(kinds) == 1 and next(iter(kinds)) in names:
        schema["type"] = names[next(iter(kinds))]
    return schema


def _set_default(schema: dict[str, Any], default: Any) -> None:
    default = to_json_value(default)
    try:
        json.dumps(default)
    except (TypeError, ValueError):
        return
    schema["default"] = default
