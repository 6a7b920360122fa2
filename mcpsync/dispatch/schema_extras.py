"""Schema rules for other libraries' types: pydantic models and constraint metadata.

pydantic is never imported here: a hint can only be a pydantic model if the program has
imported pydantic already, so :func:`pydantic_module` looks in ``sys.modules``. That keeps
pydantic an optional extra at no import cost for programs that do not use it.

Constraint metadata in ``Annotated[...]`` is read by duck typing, so the
``annotated-types`` objects (``Ge``, ``Le``, ``Gt``, ``Lt``, ``MultipleOf``, ``MinLen``,
``MaxLen``, ``Len``, ``Interval``, ``Predicate``) work with or without pydantic, and so
does pydantic's ``Field(ge=..., description=...)``, which carries them in ``.metadata``.
They go into the JSON Schema, where the validator enforces them before the function is
called; a ``Predicate`` has no schema form and is checked when decoding.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

Decoder = Callable[[Any], Any]

#: annotated-types attribute → JSON Schema keyword (numbers).
_BOUNDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum",
           "le": "maximum", "multiple_of": "multipleOf"}
#: FieldInfo attributes copied into the schema as they are.
_FIELD_TEXT = {"description": "description", "title": "title", "examples": "examples"}


def pydantic_module() -> types.ModuleType | None:
    """pydantic, if the program imported it (never imported from here)."""
    return sys.modules.get("pydantic")


def is_model(hint: Any) -> bool:
    """Whether ``hint`` is a pydantic model class."""
    pydantic = pydantic_module()
    return (pydantic is not None and isinstance(hint, type)
            and issubclass(hint, pydantic.BaseModel))


def is_model_instance(value: Any) -> bool:
    pydantic = pydantic_module()
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def is_field_info(value: Any) -> bool:
    """Whether ``value`` is pydantic's ``Field(...)`` (a ``FieldInfo``). ``pydantic.fields``
    is looked up on its own: ``import pydantic`` loads its submodules lazily, and a
    ``FieldInfo`` cannot exist before that module is loaded."""
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(value, fields.FieldInfo)


def field_default(info: Any) -> Any:
    """The default a ``Field(...)`` holds, or ``inspect.Parameter.empty`` when it has none."""
    import inspect

    if info.default_factory is not None:
        return info.default_factory()
    pydantic_core = sys.modules.get("pydantic_core")
    if pydantic_core is not None and info.default is pydantic_core.PydanticUndefined:
        return inspect.Parameter.empty
    if info.default is Ellipsis:
        return inspect.Parameter.empty
    return info.default


def model_schema(model: type[Any], defs: dict[str, Any],
                 mode: str = "validation") -> tuple[dict[str, Any], Decoder]:
    """A model's schema (its ``$defs`` moved into ``defs``, for the root of the schema it is
    placed in) and ``model_validate`` as the decoder: its ``ValidationError`` is a
    ``ValueError``, so a bad value becomes an ``isError`` result naming the argument."""
    schema = dict(model.model_json_schema(ref_template="#/$defs/{model}", mode=mode))
    for name, sub in schema.pop("$defs", {}).items():
        if defs.get(name, sub) != sub:
            raise TypeError(f"two different models are named {name!r}; rename one")
        defs[name] = sub
    validate = model.model_validate

    def decode(value: Any) -> Any:
        try:
            return validate(value)
        except ValueError as exc:  # pydantic's ValidationError: say what, without the URL
            errors = getattr(exc, "errors", None)
            if not callable(errors):
                raise
            raise ValueError("; ".join(
                f"at {'/'.join(str(p) for p in e.get('loc', ()))!r}: {e.get('msg')}"
                for e in errors())) from None

    return schema, decode


def is_constraint(extra: Any) -> bool:
    """Whether an ``Annotated`` extra is constraint metadata this module understands."""
    return is_field_info(extra) or type(extra).__module__.startswith(
        ("annotated_types", "pydantic"))


def apply_constraint(schema: dict[str, Any], extra: Any,
                     checks: list[Callable[[Any], None]]) -> dict[str, Any]:
    """``schema`` with ``extra``'s constraints (and a Field's description) added; checks
    with no schema form (``Predicate``) are appended to ``checks``."""
    if is_field_info(extra):
        for attr, key in _FIELD_TEXT.items():
            value = getattr(extra, attr, None)
            if value is not None:
                schema = {**schema, key: value}
        for item in getattr(extra, "metadata", ()):
            schema = apply_constraint(schema, item, checks)
        return schema
    schema = dict(schema)
    for attr, key in _BOUNDS.items():
        value = getattr(extra, attr, None)
        if value is not None:
            schema[key] = value
    arrayish = schema.get("type") in ("array", "object")
    for attr, text_key, array_key in (("min_length", "minLength", "minItems"),
                                      ("max_length", "maxLength", "maxItems")):
        value = getattr(extra, attr, None)
        if value is not None:
            if schema.get("type") == "object":
                array_key = array_key.replace("Items", "Properties")
            schema[array_key if arrayish else text_key] = value
    pattern = getattr(extra, "pattern", None)
    if isinstance(pattern, str):
        schema["pattern"] = pattern
    func = getattr(extra, "func", None)
    if type(extra).__name__ == "Predicate" and callable(func):
        def check(value: Any, func: Callable[[Any], Any] = func) -> None:
            if not func(value):
                name = getattr(func, "__name__", repr(func))
                raise ValueError(f"{value!r} does not satisfy {name}")

        checks.append(check)
    return schema
