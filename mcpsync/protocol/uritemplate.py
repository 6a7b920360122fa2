"""RFC 6570 URI templates: expansion, and matching a URI back to its variables.

Supports the operators resource templates use in practice — simple ``{var}``, reserved
``{+var}``, fragment ``{#var}``, label ``{.var}``, path ``{/var}`` and query ``{?a,b}`` /
``{&c}`` — with one or more variables per expression (no prefix or explode modifiers).

Matching is the inverse a server needs for ``resources/read``: given a concrete URI, which
variables produce it. Values are percent-decoded, then held to one rule in every kind of
expression (query values too), so that a template can never be used for path traversal:
a URI does not match when a value

* is an absolute path: starts with ``/`` or ``\\`` (``files:///etc/passwd``,
  ``files://%2Fetc``, ``files:////etc``), or with a drive (one character and a colon:
  ``C:``, ``c:\\x``);
* has a ``..`` segment (``/`` and ``\\`` both separate segments);
* holds a NUL character;
* or, outside ``{+var}``, ``{#var}`` and query values, holds a ``/`` or ``\\`` at all.

Matching costs time linear in the URI's length whatever the template (a backtracking regular
expression does not, for templates whose variables could share characters: see
:mod:`.template_match`), and a URI longer than ``MAX_URI_CHARS`` matches nothing.

Matching is only the first line of defence: a handler that opens files should still
resolve the value under its root with :func:`mcpsync.safe_join`, which also refuses
symbolic links that lead out of the root.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Final

from . import template_match
from .template_match import LITERAL, MAX_URI_CHARS, QUERY, RUN, Atom

_QUERY: Final = "__query__"
_EXPRESSION: Final = re.compile(r"\{([+#./?&]?)([A-Za-z0-9_.,%]+)\}")
_UNRESERVED: Final = "-._~"
_RESERVED: Final = ":/?#[]@!$&'()*+,;="

# operator -> (first char, separator, named, allow reserved chars)
_OPS: Final = {
    "": ("", ",", False, False),
    "+": ("", ",", False, True),
    "#": ("#", ",", False, True),
    ".": (".", ".", False, False),
    "/": ("/", "/", False, False),
    "?": ("?", "&", True, False),
    "&": ("&", "&", True, False),
}


class TemplateError(ValueError):
    """The template is not one this module supports."""


@dataclass(frozen=True)
class _Expression:
    op: str
    names: tuple[str, ...]


class UriTemplate:
    """A parsed template. Immutable and thread-safe."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts: list[str | _Expression] = []
        position = 0
        for match in _EXPRESSION.finditer(template):
            if match.start() > position:
                self._parts.append(template[position:match.start()])
            self._parts.append(_Expression(match.group(1), tuple(match.group(2).split(","))))
            position = match.end()
        rest = template[position:]
        if "{" in rest or "}" in rest or any(
            isinstance(p, str) and ("{" in p or "}" in p) for p in self._parts
        ):
            raise TemplateError(f"unsupported or malformed URI template: {template!r}")
        if rest:
            self._parts.append(rest)
        self.variables: tuple[str, ...] = tuple(
            name for part in self._parts if isinstance(part, _Expression) for name in part.names
        )
        if len(set(self.variables)) < len(self.variables):
            raise TemplateError(f"a variable appears twice in URI template {template!r}")
        self._atoms, self._query_names = self._compile()
        # The regular expression where it is linear; the linear matcher where two atoms
        # could take the same characters (see template_match.py).
        self._linear = template_match.ambiguous(self._atoms)
        self._regex = template_match.to_regex(self._atoms)

    def _compile(self) -> tuple[tuple[Atom, ...], tuple[str, ...]]:
        atoms: list[Atom] = []
        query: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                atoms.append(Atom(LITERAL, text=part))
                continue
            first, sep, named, _ = _OPS[part.op]
            if named:
                query.extend(part.names)
                if not any(atom.kind == QUERY for atom in atoms):
                    atoms.append(Atom(QUERY, excluded="\n", group=_QUERY))
                continue
            if first:
                atoms.append(Atom(LITERAL, text=first))
            for index, name in enumerate(part.names):
                if index:
                    atoms.append(Atom(LITERAL, text=sep))
                if part.op in ("", ".", "/"):
                    atoms.append(Atom(RUN, excluded="/?#", group=_group(name)))
                else:
                    atoms.append(Atom(RUN, excluded="\n", greedy=False, group=_group(name)))
        return tuple(atoms), tuple(query)

    def expand(self, values: dict[str, object]) -> str:
        """The URI for ``values`` (missing variables are left out, as RFC 6570 says)."""
        out = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            first, sep, named, reserved = _OPS[part.op]
            safe = _UNRESERVED + (_RESERVED if reserved else "")
            items = []
            for name in part.names:
                if values.get(name) is None:
                    continue
                text = urllib.parse.quote(str(values[name]), safe=safe)
                items.append(f"{name}={text}" if named else text)
            if items:
                out.append(first + sep.join(items))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables that expand to ``uri``, or ``None`` when it is not of this family."""
        if len(uri) > MAX_URI_CHARS:
            return None
        groups: dict[str, str | None] | None
        if self._linear:
            groups = template_match.match(self._atoms, uri)
        else:
            found = self._regex.match(uri)
            groups = None if found is None else found.groupdict()
        if groups is None:
            return None
        values: dict[str, str] = {}
        for name in self.variables:
            if name in self._query_names:
                continue
            raw = groups[_group(name)] or ""
            value = urllib.parse.unquote(raw)
            if not _safe_value(value, reserved=self._op_of(name) in ("+", "#")):
                return None
            values[name] = value
        if self._query_names:
            query = groups.get(_QUERY) or ""
            for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
                if key in self._query_names:
                    if not _safe_value(value, reserved=True):
                        return None
                    values[key] = value
        return values

    def _op_of(self, name: str) -> str:
        for part in self._parts:
            if isinstance(part, _Expression) and name in part.names:
                return part.op
        return ""

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"


def _group(name: str) -> str:
    return "v_" + re.sub(r"\W", "_", name)


def is_relative_path(value: str) -> bool:
    """Whether ``value`` is a relative path that stays below wherever it is joined: no
    leading ``/`` or ``\\``, no drive, no ``..`` segment, no NUL (``/`` inside is fine)."""
    return _safe_value(value, reserved=True)


def _safe_value(value: str, *, reserved: bool) -> bool:
    """Whether a decoded value stays a relative path below wherever it is joined."""
    if "\x00" in value:
        return False
    path = value.replace("\\", "/")
    # Any one character before a colon is a drive to Windows' path functions (``C:``).
    if path.startswith("/") or path[1:2] == ":":
        return False
    if any(segment == ".." for segment in path.split("/")):
        return False
    return reserved or "/" not in path


def is_template(uri: str) -> bool:
    """Whether ``uri`` contains template expressions."""
    return _EXPRESSION.search(uri) is not None
