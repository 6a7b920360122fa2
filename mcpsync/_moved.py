"""Old keyword spellings of constructor options that moved into option objects.

Why: ``Server``, ``Client`` and ``OAuth`` grew past twenty keywords each, so the options
few callers pass were grouped into small frozen dataclasses (``Server(limits=ServerLimits(
page_size=50))``). Code written against the flat spelling (``Server(page_size=50)``) must
keep working, with a :class:`DeprecationWarning` that names the new spelling. A
constructor takes the old keywords as ``**moved`` and hands them here: :func:`fold` moves
the ones that belong to one option object into it (a keyword given both ways: the old one
wins, as it is the more specific), and :func:`reject_unknown` raises the ``TypeError``
Python raises for an unknown keyword for whatever is left.

The warning points at the first frame outside mcpsync, so it names the user's line
whichever constructor (``Client.stdio``, ``Server.proxy``, a subclass) got the keyword.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Options = TypeVar("Options", bound="DataclassInstance")

_PACKAGE = str(Path(__file__).resolve().parent)


def fold(owner: str, keyword: str, options: Options, spellings: Mapping[str, str],
         moved: MutableMapping[str, object]) -> Options:
    """``options`` with each old keyword of ``moved`` that ``spellings`` (old keyword ->
    field of ``options``) names set on it. Each one found is removed from ``moved`` and
    warned about as ``{owner}({old}=...)`` -> ``{owner}({keyword}=Class({field}=...))``."""
    changes: dict[str, object] = {}
    for old, field in spellings.items():
        if old in moved:
            changes[field] = moved.pop(old)
            warnings.warn(
                f"{owner}({old}=...) is deprecated: pass "
                f"{owner}({keyword}={type(options).__name__}({field}=...))",
                DeprecationWarning, stacklevel=_outside_mcpsync())
    return dataclasses.replace(options, **changes) if changes else options


def reject_unknown(owner: str, moved: Mapping[str, object]) -> None:
    """The ``TypeError`` of an unknown keyword, for the first one left in ``moved``."""
    for name in moved:
        raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")


def _outside_mcpsync() -> int:
    """The ``stacklevel`` (as seen from :func:`fold`) of the nearest caller outside this
    package."""
    frame = sys._getframe(2)  # fold's caller: level 2
    level = 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
