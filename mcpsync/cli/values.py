"""Arguments given on the ``mcpsync`` command line: one JSON object, or ``key=value`` words.

Typing ``'{"a": 1, "name": "Ada"}'`` in a shell is error-prone; ``a=1 name=Ada`` is not. A
word's value is text, so for a tool it is typed by the tool's ``inputSchema``: ``a=1`` is the
number 1 for an ``integer`` or ``number`` parameter, but stays the string ``"1"`` for a
``string`` one (a string is never parsed). ``true``/``false`` for a ``boolean``, JSON for an
``object`` or ``array``, ``null`` for a nullable parameter. A key the schema does not name
is a usage error, unless the schema allows other keys (``additionalProperties``) or names
none at all; such a key, or a parameter whose schema says nothing of its type, gets the
JSON value when the text is JSON and the text otherwise. A value that fits none of the
parameter's types is a usage error naming the parameter and what it expects. Prompt
arguments are strings on the wire, always.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from ..display.schema import type_name
from .target import UsageError

#: A JSON integer, and a JSON number (what ``a=1`` must look like for those types).
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
#: How deep ``anyOf``/``oneOf``/``allOf`` are followed to find a parameter's types.
_MAX_DEPTH = 4
#: The order types are tried in: the most particular first, a string last (it takes any text).
_ORDER = ("null", "boolean", "integer", "number", "object", "array", "string")


def is_json_object(words: Sequence[str]) -> bool:
    """Whether the arguments are given as one JSON object (the older form, still valid)."""
    return len(words) == 1 and words[0].lstrip().startswith("{")


def split_words(words: Sequence[str]) -> dict[str, str]:
    """``key=value`` words as a dict of texts (a value keeps any further ``=``); one word
    that is not ``key=value`` is a usage error saying what is expected."""
    pairs: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not equals or not key:
            raise UsageError(f"argument {word!r} is not KEY=VALUE (give the arguments as "
                             f"KEY=VALUE words, or as one JSON object)")
        if key in pairs:
            raise UsageError(f"argument {key!r} is given twice")
        pairs[key] = value
    return pairs


def json_object(text: str) -> dict[str, Any]:
    """One JSON object; anything else is a usage error."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"arguments must be JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("arguments must be a JSON object")
    return value


def tool_arguments(pairs: dict[str, str], schema: object, tool: str = "") -> dict[str, Any]:
    """``key=value`` texts typed by a tool's input schema (see the module's docstring).

    A key the schema's ``properties`` do not name, where it does not allow others
    (``additionalProperties`` absent or false), is a usage error naming the parameters:
    a misspelt ``nmae=Ada`` (or ``x=y=z``) would otherwise be sent, ignored, and the tool
    run without it. A schema without ``properties`` says nothing: every key is sent."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict) and isinstance(schema, dict) and \
            schema.get("additionalProperties") in (None, False):
        the_tool = f"the tool {tool!r}" if tool else "the tool"
        for key, text in pairs.items():
            if key in props:
                continue
            if not props:
                raise UsageError(f"{key}={text}: {the_tool} takes no arguments")
            raise UsageError(f"{key}={text}: {the_tool} has no parameter {key!r} (its "
                             f"parameters: {', '.join(props)})")
    props = props if isinstance(props, dict) else {}
    return {key: typed(key, text, props.get(key)) for key, text in pairs.items()}


def prompt_arguments(words: Sequence[str]) -> dict[str, str]:
    """A prompt's arguments: ``key=value`` words, or one JSON object of strings."""
    if not is_json_object(words):
        return split_words(words)
    values = json_object(words[0])
    wrong = sorted(k for k, v in values.items() if not isinstance(v, str))
    if wrong:
        raise UsageError(f"prompt arguments are strings: {', '.join(map(repr, wrong))} "
                         f"is not")
    return values


def typed(key: str, text: str, spec: object) -> Any:
    """``text`` as the value the parameter ``key`` (schema ``spec``) takes."""
    kinds = _types(spec, 0)
    if not kinds:  # an unknown key, or a schema that does not say: JSON if it is JSON
        try:
            return json.loads(text)
        except ValueError:
            return text
    for kind in _ORDER:
        if kind in kinds:
            ok, value = _as(kind, text)
            if ok:
                return value
    raise UsageError(f"{key}={text}: the parameter {key!r} expects {type_name(spec)}"
                     f"{_hint(kinds)}")


def _hint(kinds: set[str]) -> str:
    if kinds & {"object", "array"}:
        return " (as JSON)"
    if "boolean" in kinds:
        return " (true or false)"
    return ""


def _as(kind: str, text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is a value of the JSON type ``kind``."""
    if kind == "string":
        return True, text
    if kind == "null":
        return text == "null", None
    if kind == "boolean":
        return (True, text == "true") if text in ("true", "false") else (False, None)
    if kind == "integer":
        return (True, int(text)) if _INTEGER.fullmatch(text) else (False, None)
    if kind == "number":
        if not _NUMBER.fullmatch(text):
            return False, None
        number = float(text)
        if not math.isfinite(number):
            return False, None
        return True, int(text) if _INTEGER.fullmatch(text) else number
    try:
        value = json.loads(text)
    except ValueError:
        return False, None
    return isinstance(value, dict if kind == "object" else list), value


def _types(spec: object, depth: int) -> set[str]:
    """The JSON types a parameter's schema admits, as far as a few levels of ``anyOf``,
    ``oneOf``, ``allOf``, ``enum`` and ``const`` say; empty when it does not say."""
    if not isinstance(spec, dict) or depth > _MAX_DEPTH:
        return set()
    kind = spec.get("type")
    if isinstance(kind, str):
        found = {kind}
    elif isinstance(kind, list):
        found = {k for k in kind if isinstance(k, str)}
    else:
        found = set()
    values = spec.get("enum") if isinstance(spec.get("enum"), list) else None
    if "const" in spec:
        values = [spec["const"]]
    if values and not found:
        found = {_json_type(v) for v in values}
    for key in ("anyOf", "oneOf", "allOf"):
        options = spec.get(key)
        if isinstance(options, list):
            inner = [_types(option, depth + 1) for option in options]
            if any(not kinds for kinds in inner):
                return set()  # one option admits anything: so does the parameter
            for kinds in inner:
                found |= kinds
    return found


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
