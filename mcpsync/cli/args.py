"""How the ``mcpsync`` command reads its option values: each function is an argparse
``type=`` that turns the text into a value or says, in one line, why it can not be one
(argparse reports that as a usage error, exit status 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from ..protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS

N = TypeVar("N", int, float)


def port(text: str) -> int:
    """A TCP port; 0 asks the system for any free one (the printed URL has it)."""
    return _number(text, int, lambda n: 0 <= n <= 65535,
                   "is not a port: use 0..65535 (0: any free port)")


def positive(text: str) -> float:
    """Seconds above 0 and finite: 0, a negative or ``inf`` would disable a bound."""
    return _number(text, float, lambda v: 0 < v < float("inf"),
                   "is not a positive number of seconds")


def count(text: str) -> int:
    """A whole number of 1 or more (a cap of 0 would refuse everything)."""
    return _number(text, int, lambda n: n >= 1, "is not a positive whole number")


def _number(text: str, kind: Callable[[str], N], fits: Callable[[N], bool],
            why: str) -> N:
    """``kind(text)`` when it parses and ``fits``; else the one-line usage error."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} {why}") from None
    if not fits(value):
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    return value


def header(text: str) -> tuple[str, str]:
    """``NAME: VALUE``; a name that is not an HTTP token, or a line break anywhere
    (header injection), is refused here rather than by the HTTP library later."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name or any(c in name for c in " \t()<>@,;:\\\"/[]?={}") or any(
            c in text for c in "\r\n\0"):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:VALUE (e.g. "
                                         f"'Authorization: Bearer TOKEN')")
    return name, value


VERSIONS = (*MODERN_VERSIONS, *LEGACY_VERSIONS, "auto")


def version(text: str) -> str:
    """A protocol revision mcpsync speaks, or ``auto``."""
    if text not in VERSIONS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(VERSIONS)}")
    return text


def level(text: str) -> str:
    """A log level of the protocol (RFC 5424 names: debug .. emergency)."""
    from ..protocol.levels import LEVELS

    if text not in LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LEVELS)}")
    return text


def seconds(text: str) -> float:
    """A per-request deadline in seconds (as :func:`positive`)."""
    try:
        return positive(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds"
                                         ) from None
