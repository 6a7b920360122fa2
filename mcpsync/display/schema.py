"""A JSON Schema as a short type name, for the tool table of a notebook and the CLI.

A person scanning a tool list wants ``scale: number | null``, ``names: array of string``
or ``mode: "fast" | "slow"``, not ``any`` for everything that is not one plain ``type``
(``Optional[float]`` is an ``anyOf``, so it used to read ``any``). The schema comes from the
server and is untrusted: nesting is followed only a few levels deep and every name is cut
to a bounded length, so a hostile schema can not make a listing slow or huge.
"""

from __future__ import annotations

import json
from typing import Any

#: How deep unions and array items are followed; deeper parts read ``…``.
MAX_DEPTH = 4
#: Longest type name shown for one parameter (the rest is cut with ``…``).
MAX_NAME_CHARS = 80
#: At most this many enum values are listed.
MAX_ENUM_VALUES = 6


def type_name(schema: object, depth: int = 0) -> str:
    """What values ``schema`` admits, in a few words (``any`` when it does not say)."""
    name = _name(schema, depth)
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS - 1] + "…"


def _name(schema: object, depth: int) -> str:
    if schema is True or schema == {}:
        return "any"
    if not isinstance(schema, dict):
        return "any"
    if depth > MAX_DEPTH:
        return "…"
    if "const" in schema:
        return _literal(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = [_literal(value) for value in enum[:MAX_ENUM_VALUES]]
        return " | ".join(shown + (["…"] if len(enum) > MAX_ENUM_VALUES else []))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _union(_name(option, depth + 1) for option in options)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return _name(all_of[0], depth + 1)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref:
        return ref.rsplit("/", 1)[-1] or "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(_plain(schema, str(k), depth) for k in kind) or "any"
    if isinstance(kind, str):
        return _plain(schema, kind, depth)
    return "any"


def _plain(schema: dict[str, Any], kind: str, depth: int) -> str:
    """One ``type``, with what an array or a map holds when the schema says."""
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, dict) and items:
            inner = _name(items, depth + 1)
            return f"array of {f'({inner})' if ' | ' in inner else inner}"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict) and values and not schema.get("properties"):
            inner = _name(values, depth + 1)
            return f"object of {f'({inner})' if ' | ' in inner else inner}"
    return kind


def _union(names: Any) -> str:
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return "any" if "any" in seen else " | ".join(seen)


def _literal(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)[:MAX_NAME_CHARS]
    except (TypeError, ValueError):
        return "?"


def parameters(schema: object) -> list[str]:
    """``name: type`` for each property of an input schema; required ones end with ``*``."""
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties")
    required = schema.get("required") or []
    if not isinstance(props, dict):
        return []
    out = []
    for name, spec in props.items():
        star = "*" if isinstance(required, list) and name in required else ""
        out.append(f"{name}{star}: {type_name(spec)}")
    return out


__all__ = ["parameters", "type_name"]
