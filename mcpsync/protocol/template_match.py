"""Matching a URI against a URI template's pattern in time linear in the URI's length.

A template compiles to a sequence of :class:`Atom` s: literal text, a variable (a run of
characters of one class, greedy or lazy), and the optional query part. Written as a regular
expression this is what Python's backtracking engine runs, and it is linear as long as
every variable's run ends where the next atom must begin (``users://{id}/profile``: ``{id}``
cannot hold the ``/`` that follows it). When two atoms can both take the same characters
(``{a,b}``, ``{name}{.ext}``, ``{+dir}/{+file}``) a URI that fails to match costs the
engine time polynomial in its length, with one power per such atom: with ``{a,b,c}``, a
2 kB URI took 12 s on one core, holding the GIL. A client chooses the URI, so for those
templates :func:`match` decides reachability right to left, then picks each variable's
extent left to right exactly as the regular expression would (greedy runs as long as the
rest can still match, lazy ones as short), in O(URI length x atoms).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

LITERAL: Final = "literal"
RUN: Final = "run"
QUERY: Final = "query"

#: The longest URI any template is matched against (RFC 9110 asks for at least 8000
#: octets); longer ones match no template. It bounds the linear matcher's work too.
MAX_URI_CHARS: Final = 16 * 1024


class Atom(NamedTuple):
    """One piece of a template's pattern."""

    kind: str
    text: str = ""  # LITERAL: the text
    excluded: str = ""  # RUN, QUERY: the characters the run does not take
    greedy: bool = True
    group: str = ""  # RUN: the group's name; QUERY: "__query__"


def to_regex(atoms: tuple[Atom, ...]) -> re.Pattern[str]:
    """The regular expression the atoms stand for (anchored at both ends)."""
    out = []
    for atom in atoms:
        if atom.kind == LITERAL:
            out.append(re.escape(atom.text))
        elif atom.kind == RUN:
            body = f"[^{re.escape(atom.excluded)}]*" + ("" if atom.greedy else "?")
            out.append(f"(?P<{atom.group}>{body})")
        else:
            out.append(f"(?:[?&](?P<{atom.group}>[^{re.escape(atom.excluded)}]*))?")
    return re.compile("^" + "".join(out) + r"\Z")


def ambiguous(atoms: tuple[Atom, ...]) -> bool:
    """Whether a backtracking engine may try every split of the URI between two runs: some
    run can take a character the atoms after it could begin with, and another run (or the
    query part) comes after it. (One such run followed by literals only costs the engine
    O(length x literal), which is linear.)"""
    for index, atom in enumerate(atoms):
        rest = atoms[index + 1:]
        if atom.kind != LITERAL and _overlaps(atom, rest) and any(
                after.kind != LITERAL for after in rest):
            return True
    return False


def _overlaps(run: Atom, rest: tuple[Atom, ...]) -> bool:
    """Whether ``run`` can take a character that what follows it may begin with."""
    for after in rest:
        if after.kind == LITERAL:
            if after.text:
                return after.text[0] not in run.excluded
        elif after.kind == QUERY:
            if "?" not in run.excluded or "&" not in run.excluded:
                return True  # optional: what comes after it may begin there too
        else:
            return True  # two runs in a row: both take most characters
    return False


def match(atoms: tuple[Atom, ...], uri: str) -> dict[str, str | None] | None:
    """Each group's text (``None`` for an absent query part), or None when ``uri`` does not
    match; the same answer as :func:`to_regex`'s pattern, in linear time."""
    size = len(uri)
    # reach[j][i]: atoms[j:] match uri[i:] exactly. extra[j]: for a QUERY atom, whether
    # its run followed by atoms[j + 1:] matches uri[i:].
    reach: list[bytearray] = [bytearray(0)] * (len(atoms) + 1)
    extra: dict[int, bytearray] = {}
    done = bytearray(size + 1)
    done[size] = 1
    reach[len(atoms)] = done
    for j in range(len(atoms) - 1, -1, -1):
        atom, after = atoms[j], reach[j + 1]
        if atom.kind == LITERAL:
            reach[j] = _literal(uri, atom.text, after)
        elif atom.kind == RUN:
            reach[j] = _run(uri, atom.excluded, after)
        else:
            run = extra[j] = _run(uri, atom.excluded, after)
            here = bytearray(after)
            for i in range(size):
                if uri[i] in "?&" and run[i + 1]:
                    here[i] = 1
            reach[j] = here
    if not reach[0][0]:
        return None
    groups: dict[str, str | None] = {}
    position = 0
    for j, atom in enumerate(atoms):
        after = reach[j + 1]
        if atom.kind == LITERAL:
            position += len(atom.text)
        elif atom.kind == RUN:
            end = _extent(uri, position, atom, after)
            groups[atom.group] = uri[position:end]
            position = end
        elif position < size and uri[position] in "?&" and extra[j][position + 1]:
            end = _extent(uri, position + 1, atom, after)
            groups[atom.group] = uri[position + 1:end]
            position = end
        else:
            groups[atom.group] = None
    return groups


def _literal(uri: str, text: str, after: bytearray) -> bytearray:
    if not text:
        return bytearray(after)
    here = bytearray(len(uri) + 1)
    start = uri.find(text)
    while start != -1:
        if after[start + len(text)]:
            here[start] = 1
        start = uri.find(text, start + 1)
    return here


def _run(uri: str, excluded: str, after: bytearray) -> bytearray:
    """Where a run of characters not in ``excluded``, then what ``after`` stands for,
    matches: from the right, a position can start it if the rest matches there or if its
    character may be taken and the next position can start it."""
    here = bytearray(after)
    for i in range(len(uri) - 1, -1, -1):
        if not here[i] and here[i + 1] and uri[i] not in excluded:
            here[i] = 1
    return here


def _extent(uri: str, start: int, atom: Atom, after: bytearray) -> int:
    """Where the run starting at ``start`` ends: the farthest (greedy) or nearest (lazy)
    end the rest can match from."""
    limit = start
    while limit < len(uri) and uri[limit] not in atom.excluded:
        limit += 1
    ends = range(limit, start - 1, -1) if atom.greedy else range(start, limit + 1)
    return next(end for end in ends if after[end])
