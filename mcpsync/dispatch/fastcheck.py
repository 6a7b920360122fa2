"""A small JSON Schema checker for the schemas mcpsync generates, compiled once per schema.

Why: ``import jsonschema`` eagerly imports its format checkers' optional dependencies, and
in a data-science environment (Jupyter installs ``jsonschema[format-nongpl]``) that costs
over a second, before a server can answer its first call. The schemas that type hints
produce (see :mod:`.schema`) use a small subset of 2020-12, so :func:`compile_schema` turns
such a schema into nested closures that answer *valid or not* without jsonschema.

The checker only ever says "valid" when jsonschema would: it mirrors jsonschema's
semantics keyword by keyword (type rules, ``1 == 1.0`` but ``True != 1``, ``re.search``
for ``pattern``, no ``format`` assertion), and any keyword outside the subset makes
:func:`compile_schema` return ``None`` so the caller uses jsonschema instead. When the
checker says "invalid", the caller asks jsonschema for the precise error message, so error
texts are exactly jsonschema's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema

Check = Callable[[Any], bool]

#: Keywords that assert nothing in 2020-12 (as jsonschema ignores them) or that mcpsync's
#: schemas carry as annotations. ``discriminator`` is pydantic's and unknown to jsonschema.
_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment", "$schema", "format", "contentEncoding", "contentMediaType", "discriminator",
})
_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_REF_PREFIX = "#/$defs/"


class _Unsupported(Exception):
    """The schema uses something outside the subset: jsonschema must check it."""


def compile_schema(schema: Any) -> Check | None:
    """A function telling whether a JSON value is valid against ``schema``, or ``None`` when
    the schema is outside the subset this module implements (then use jsonschema)."""
    root_defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    if not isinstance(root_defs, dict):
        return None
    compiler = _Compiler(root_defs)
    try:
        return compiler.compile(schema, root=True)
    except (_Unsupported, re.error, TypeError, ValueError, RecursionError):
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_type(value: Any, name: str) -> bool:
    """jsonschema's default type checker, for the values JSON decoding produces."""
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "number":
        return _is_number(value)
    # integer: a float with no fraction counts, as in jsonschema
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _key(value: Any) -> Any:
    """A hashable form under which two JSON values are equal exactly when jsonschema's
    ``equal`` says so (``1`` and ``1.0`` alike, ``True`` and ``1`` not)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z",)
    if isinstance(value, list):
        return ("l", tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("d", frozenset((k, _key(v)) for k, v in value.items()))
    raise TypeError("not a JSON value")


def _safe_key(value: Any) -> Any:
    try:
        return _key(value)
    except (TypeError, RecursionError):
        return object()  # equal to nothing: the caller then reports "invalid" and defers


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Unsupported("a count must be a non-negative integer")
    return value


def _number(value: Any) -> int | float:
    if not _is_number(value):
        raise _Unsupported("a bound must be a number")
    return value  # type: ignore[no-any-return]


def _multiple(instance: int | float, divisor: int | float) -> bool:
    """jsonschema's ``multipleOf`` arithmetic, kept identical (float quotient first)."""
    if isinstance(divisor, float):
        quotient = instance / divisor
        try:
            return int(quotient) == quotient
        except OverflowError:
            from fractions import Fraction  # rare; fractions imports decimal

            return (Fraction(instance) / Fraction(divisor)).denominator == 1
    return not instance % divisor


class _Compiler:
    def __init__(self, defs: dict[str, Any]) -> None:
        self._defs = defs
        self._compiled: dict[str, Check] = {}

    def _ref(self, ref: Any) -> Check:
        if not isinstance(ref, str) or not ref.startswith(_REF_PREFIX):
            raise _Unsupported("only local $defs references")
        name = ref[len(_REF_PREFIX):]
        if "/" in name or "~" in name or "%" in name or name not in self._defs:
            raise _Unsupported("a reference this checker does not resolve")
        if name not in self._compiled:
            cell: list[Check] = []
            # Placed before compiling so a recursive model refers to itself.
            self._compiled[name] = lambda value: cell[0](value)
            cell.append(self.compile(self._defs[name]))
        return self._compiled[name]

    def compile(self, schema: Any, root: bool = False) -> Check:
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise _Unsupported("a schema must be an object or a boolean")
        checks: list[Check] = []
        asserted: list[str] = []
        for keyword, arg in schema.items():
            if keyword in _ANNOTATIONS:
                continue
            if keyword == "$defs":
                if not root:
                    raise _Unsupported("$defs below the root")
                continue
            checks.append(self._keyword(keyword, arg, schema))
            asserted.append(keyword)
        if not checks:
            return lambda value: True
        if len(checks) == 1:
            return checks[0]
        if schema.get("type") == "object" and set(asserted) <= _OBJECT_KEYWORDS:
            # A tool's input schema (and most models): one closure, no nested all().
            return _object_check(self, schema)
        return _all_of(checks)

    def _keyword(self, keyword: str, arg: Any, schema: dict[str, Any]) -> Check:
        if keyword == "type":
            names = [arg] if isinstance(arg, str) else arg
            if not isinstance(names, list) or not names or any(n not in _TYPES for n in names):
                raise _Unsupported("type")
            if len(names) == 1:
                name = names[0]
                direct = _DIRECT_TYPES.get(name)
                if direct is not None:
                    return direct
                return lambda value: _is_type(value, name)
            return lambda value: any(_is_type(value, n) for n in names)
        if keyword == "properties":
            if not isinstance(arg, dict):
                raise _Unsupported("properties")
            props = {name: self.compile(sub) for name, sub in arg.items()}
            return lambda value: (not isinstance(value, dict) or all(
                check(value[name]) for name, check in props.items() if name in value))
        if keyword == "required":
            if not isinstance(arg, list) or not all(isinstance(n, str) for n in arg) \
                    or len(set(arg)) != len(arg):
                raise _Unsupported("required")
            names = list(arg)
            return lambda value: not isinstance(value, dict) or all(n in value for n in names)
        if keyword == "additionalProperties":
            if "patternProperties" in schema:
                raise _Unsupported("patternProperties")
            known = frozenset(schema.get("properties", {}))
            extra = self.compile(arg)
            return lambda value: not isinstance(value, dict) or all(
                extra(item) for key, item in value.items() if key not in known)
        if keyword == "propertyNames":
            names_check = self.compile(arg)
            return lambda value: not isinstance(value, dict) or all(
                names_check(key) for key in value)
        if keyword in ("minProperties", "maxProperties"):
            bound = _count(arg)
            if keyword == "minProperties":
                return lambda value: not isinstance(value, dict) or len(value) >= bound
            return lambda value: not isinstance(value, dict) or len(value) <= bound
        if keyword == "items":
            item = self.compile(arg)
            prefix = schema.get("prefixItems", [])
            start = len(prefix) if isinstance(prefix, list) else 0
            return lambda value: not isinstance(value, list) or all(
                item(v) for v in value[start:])
        if keyword == "prefixItems":
            if not isinstance(arg, list) or not arg:
                raise _Unsupported("prefixItems")
            parts = [self.compile(sub) for sub in arg]
            return lambda value: not isinstance(value, list) or all(
                check(v) for check, v in zip(parts, value, strict=False))
        if keyword in ("minItems", "maxItems"):
            bound = _count(arg)
            if keyword == "minItems":
                return lambda value: not isinstance(value, list) or len(value) >= bound
            return lambda value: not isinstance(value, list) or len(value) <= bound
        if keyword == "uniqueItems":
            if not isinstance(arg, bool):
                raise _Unsupported("uniqueItems")
            if not arg:
                return lambda value: True
            return lambda value: not isinstance(value, list) or len(
                {_safe_key(v) for v in value}) == len(value)
        if keyword in ("minLength", "maxLength"):
            bound = _count(arg)
            if keyword == "minLength":
                return lambda value: not isinstance(value, str) or len(value) >= bound
            return lambda value: not isinstance(value, str) or len(value) <= bound
        if keyword == "pattern":
            if not isinstance(arg, str):
                raise _Unsupported("pattern")
            search = re.compile(arg).search
            return lambda value: not isinstance(value, str) or search(value) is not None
        if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            limit = _number(arg)
            # The same comparisons as jsonschema, so NaN and friends end the same way.
            if keyword == "minimum":
                return lambda value: not _is_number(value) or not value < limit
            if keyword == "maximum":
                return lambda value: not _is_number(value) or not value > limit
            if keyword == "exclusiveMinimum":
                return lambda value: not _is_number(value) or not value <= limit
            return lambda value: not _is_number(value) or not value >= limit
        if keyword == "multipleOf":
            divisor = _number(arg)
            if divisor <= 0:
                raise _Unsupported("multipleOf")
            return lambda value: not _is_number(value) or _multiple(value, divisor)
        if keyword in ("enum", "const"):
            options = arg if keyword == "enum" else [arg]
            if not isinstance(options, list):
                raise _Unsupported("enum")
            keys = frozenset(_key(v) for v in options)
            return lambda value: _safe_key(value) in keys
        if keyword in ("anyOf", "oneOf", "allOf"):
            if not isinstance(arg, list) or not arg:
                raise _Unsupported(keyword)
            subs = [self.compile(sub) for sub in arg]
            if keyword == "anyOf":
                return lambda value: any(check(value) for check in subs)
            if keyword == "allOf":
                return lambda value: all(check(value) for check in subs)
            return lambda value: sum(1 for check in subs if check(value)) == 1
        if keyword == "not":
            negated = self.compile(arg)
            return lambda value: not negated(value)
        if keyword == "$ref":
            return self._ref(arg)
        raise _Unsupported(keyword)


#: Keywords :func:`_object_check` fuses with ``type: object`` into one closure.
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required"})


def _direct(kind: type | tuple[type, ...]) -> Check:
    return lambda value: isinstance(value, kind)


#: ``type`` checks that are one isinstance (the same answers as :func:`_is_type`).
_DIRECT_TYPES: dict[str, Check] = {
    "string": _direct(str), "object": _direct(dict), "array": _direct(list),
    "boolean": _direct(bool), "null": lambda value: value is None,
}


def _all_of(checks: list[Check]) -> Check:
    def check(value: Any) -> bool:
        for one in checks:  # noqa: SIM110  (a loop: no generator made per value)
            if not one(value):
                return False
        return True

    return check


def _object_check(compiler: _Compiler, schema: dict[str, Any]) -> Check:
    """``type: object`` with ``properties`` and ``required`` (each checked as
    :meth:`_Compiler._keyword` checks it first), as one loop over the value."""
    compiler._keyword("required", schema.get("required", []), schema)  # refuses a bad one
    required = tuple(schema.get("required", ()))
    props = tuple((name, compiler.compile(sub))
                  for name, sub in schema.get("properties", {}).items())

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        for name in required:
            if name not in value:
                return False
        for name, one in props:  # noqa: SIM110  (a loop: no generator made per value)
            if name in value and not one(value[name]):
                return False
        return True

    return check


def validator_class() -> type[jsonschema.Draft202012Validator]:
    """jsonschema, imported on first need rather than with mcpsync (see the module text)."""
    import jsonschema

    return jsonschema.Draft202012Validator


class SchemaValidator:
    """One schema's validation: the compiled fast check when the schema is in the subset,
    jsonschema otherwise and for the error messages of a value the fast check refuses.

    ``generated`` says the schema came from :class:`~.schema.SchemaBuilder`; a hand-written
    schema (or a generated one outside the subset) is checked against the metaschema at once,
    so a bad schema fails at registration as it always has. Thread-safe: the jsonschema
    validator is built at most a few times over (a harmless race), then reused.
    """

    def __init__(self, schema: dict[str, Any], *, generated: bool = True) -> None:
        self.schema = schema
        self._fast = compile_schema(schema) if generated else None
        self._slow: jsonschema.Draft202012Validator | None = None
        if self._fast is None:
            cls = validator_class()
            cls.check_schema(schema)
            self._slow = cls(schema)

    def _jsonschema(self) -> jsonschema.Draft202012Validator:
        slow = self._slow
        if slow is None:
            slow = self._slow = validator_class()(self.schema)
        return slow

    @property
    def fast(self) -> bool:
        """Whether values are checked without jsonschema (until one is refused)."""
        return self._fast is not None

    def _fast_accepts(self, value: Any) -> bool:
        """The fast verdict; a value nested deeper than the stack allows (a recursive model)
        is left to jsonschema, which words the failure."""
        try:
            return self._fast is not None and self._fast(value)
        except RecursionError:
            return False

    def is_valid(self, value: Any) -> bool:
        if self._fast_accepts(value):
            return True
        return bool(self._jsonschema().is_valid(value))

    def errors(self, value: Any) -> list[jsonschema.ValidationError]:
        """jsonschema's errors for ``value`` (none when it is valid)."""
        fast = self._fast
        if fast is not None:
            # _fast_accepts, inlined: this runs on every tool call.
            try:
                if fast(value):
                    return []
            except RecursionError:
                pass
        return list(self._jsonschema().iter_errors(value))
