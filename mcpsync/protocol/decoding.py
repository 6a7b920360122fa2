"""Guards on raw input before it becomes a message: line framing, JSON depth, numerals.

Everything a peer sends arrives as bytes or text that is hostile until shown otherwise, and
each guard here keeps a hostile input's cost bounded before the parser (or ``int()``) sees
it. Sans-IO and pure (the line decoder holds only its own buffer).

**Framing.** Newline-delimited JSON for stdio (and any byte stream): :class:`LineDecoder`
turns arbitrary chunks of bytes into complete lines. A line longer than
``max_line_bytes`` is not buffered whole: its bytes are dropped as they arrive and a single
:data:`OVERSIZED` marker stands in for it, so a hostile 64 MiB line costs no more memory
than the limit and the stream stays in sync at the next newline.

**Nesting.** How deep a JSON text nests, measured before it is parsed. Python's JSON parser
is recursive C code: on a hostile line (``[`` a hundred thousand times) it descends until
it is near Python's recursion limit and only then gives up. Whatever runs on that thread
meanwhile has no stack left: the garbage collector runs finalizers and gc callbacks in
whichever thread allocates, and those then fail with ``RecursionError``. So the nesting is
measured first, without recursion and at C speed, and the parser is only given text that
is within the limit (:func:`prune` cuts what is deeper). Both read strings the way a JSON
parser does as long as the text is JSON; on text that is not, they never measure less
depth than a parser reaches before it fails (it stops at the first backslash outside a
string at the latest; an unterminated string runs to the end). Their cost is linear in the
length of any input, hostile or not: a few C string operations and at most one C iterator
over the characters, no Python code per character or per string.

**Numerals.** Decimal numbers in hostile text (header values, SSE fields):
:func:`parse_decimal`.

**Text.** JSON can carry a lone surrogate (``"\\ud800"``), which has no UTF-8 form: text
from a peer that must become bytes (a message echoed back, a store's key) is checked with
:func:`utf8_encodable` first.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from itertools import accumulate, repeat
from typing import Final

# -- framing --

DEFAULT_MAX_LINE_BYTES: Final = 16 * 1024 * 1024


class _Oversized:
    __slots__ = ()

    def __repr__(self) -> str:
        return "OVERSIZED"


OVERSIZED: Final = _Oversized()

Frame = bytes | _Oversized


class LineDecoder:
    """Split a byte stream into lines. Not thread-safe: one reader feeds it."""

    __slots__ = ("_buffer", "_discarding", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, chunk: bytes) -> list[Frame]:
        """Add bytes; return every line they complete (without the newline, ``\\r`` stripped)."""
        frames: list[Frame] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                break
            if self._discarding:
                self._discarding = False
            else:
                piece = chunk[start:newline]
                if len(self._buffer) + len(piece) > self.max_line_bytes:
                    frames.append(OVERSIZED)
                else:
                    if self._buffer:
                        self._buffer += piece
                        line = bytes(self._buffer)
                        self._buffer.clear()
                    else:
                        line = piece
                    line = line.rstrip(b"\r")
                    if line.strip():
                        frames.append(line)
            self._buffer.clear()
            start = newline + 1
        rest = chunk[start:]
        if rest and not self._discarding:
            if len(self._buffer) + len(rest) > self.max_line_bytes:
                self._buffer.clear()
                self._discarding = True
                frames.append(OVERSIZED)
            else:
                self._buffer += rest
        return frames

    def finish(self) -> list[Frame]:
        """At end of stream: a last line without a trailing newline still counts."""
        if self._discarding or not self._buffer.strip():
            self._buffer.clear()
            return []
        line = bytes(self._buffer).rstrip(b"\r")
        self._buffer.clear()
        return [line]


# -- nesting --

_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}
#: Between strings, only the brackets are kept, all as ``[`` and ``]``. JSON has nothing
#: but ASCII there; anything else is left in, where it stops the peeling (see deeper_than).
_SKELETON: Final = {**{code: None for code in range(128) if chr(code) not in "[]{}"},
                    ord("{"): "[", ord("}"): "]"}
#: Inside strings, brackets are blanked (see _masked).
_BLANK_BRACKETS: Final = str.maketrans("[]{}", "____")


def deeper_than(text: str, limit: int) -> bool:
    """Whether arrays/objects in ``text`` nest more than ``limit`` levels (a top-level object
    is level 1), found with a handful of C string operations.

    Escaped backslashes and quotes are dropped first, so every quote left opens or closes a
    string; what lies between strings is kept, reduced to its brackets (``{}`` read as
    ``[]``: depth does not care which), and its innermost pairs are removed, one level per
    pass: a balanced skeleton is no deeper than ``limit`` when ``limit`` passes empty it.
    A run of ``limit + 1`` opening brackets ends it at once; a pass that removes little (a
    hostile shape) hands over to one exact linear measure, so the cost stays linear.
    Each level needs a bracket, so a text with no more than ``limit`` of them is not
    measured at all (most messages)."""
    if text.count("[") + text.count("{") <= limit:  # an upper bound of the depth
        return False
    unescaped = text
    if "\\" in text:
        unescaped = text.replace("\\\\", "").replace('\\"', "")
    skeleton = "".join(unescaped.split('"')[::2]).translate(_SKELETON)
    run = "[" * (limit + 1)
    for _ in range(limit):
        if not skeleton:
            return False
        if run in skeleton:
            return True
        peeled = skeleton.replace("[]", "")
        removed = len(skeleton) - len(peeled)
        # Nothing removed: not balanced (not JSON). Little removed from a long skeleton: a
        # shape built to make every pass cost its whole length. Measure either exactly.
        if not removed or (len(skeleton) > 4096 and removed < len(skeleton) >> 4):
            return max(_levels(_masked(text)), default=0) > limit
        skeleton = peeled
    return bool(skeleton)


def _masked(text: str) -> str:
    """``text``, same length, with each escape pair and each bracket inside a string
    blanked: what is left of the brackets is the structure. An unterminated string runs
    to the end. All C string operations (a regex over strings is 5-10 times slower)."""
    if "\\" in text:
        text = text.replace("\\\\", "__").replace('\\"', "__")
    parts = text.split('"')
    if len(parts) > 1:
        parts[1::2] = '"'.join(parts[1::2]).translate(_BLANK_BRACKETS).split('"')
    return '"'.join(parts)


def _levels(masked: str) -> Iterator[int]:
    """The depth after each character of ``masked`` (C iterators, no Python per character)."""
    return accumulate(map(_STEP.get, masked, repeat(0)))


def prune(text: str, keep: int) -> str | None:
    """``text`` with each array/object that opens at depth ``keep + 1`` replaced by ``0``;
    None when such a container never closes (the text is not JSON).

    The crossings are found in the masked text with :func:`operator.indexOf`, which walks
    the depth iterator in C and leaves it just past the match; the original text is cut at
    the same positions."""
    levels = _levels(_masked(text))
    out: list[str] = []
    copied = position = 0
    cutting = False
    while True:
        try:
            position += operator.indexOf(levels, keep if cutting else keep + 1) + 1
        except ValueError:
            break
        at = position - 1  # text[at] is the bracket that opened or closed the cut
        if cutting:
            copied = at + 1
        else:
            out.append(text[copied:at])
            out.append("0")
        cutting = not cutting
    if cutting:
        return None
    out.append(text[copied:])
    return "".join(out)


# -- numerals and text --

def parse_decimal(text: str, max_digits: int = 18) -> int | None:
    """``text`` as a non-negative integer if it is 1..``max_digits`` ASCII digits, else None.

    Never ``str.isdigit()`` then ``int()``: ``"²".isdigit()`` is true but ``int("²")``
    raises, and ``int()`` also takes ``"-1"``, ``"+5"``, ``" 7"`` and ``"1_0"``, and refuses
    more than 4300 digits. Header values (``Content-Length``, ``Last-Event-ID``) are hostile
    input: a bad one is "absent", never an exception in the app.
    """
    if not 0 < len(text) <= max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
