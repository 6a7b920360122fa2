"""Opaque cursors for the paginated list methods.

A cursor encodes the offset of the next page. It is opaque to clients by contract, so the
encoding may change; a cursor that does not decode is answered with -32602, as the spec asks.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import InvalidParamsError

T = TypeVar("T")

_PREFIX = "mcpsync:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{offset}".encode()).decode("ascii")


#: Offsets have at most this many digits; a longer cursor is not one of ours (and ``int()``
#: refuses strings of more than 4300 digits with a ValueError of its own).
_MAX_DIGITS = 18
#: How much of a bad cursor an error message quotes.
_QUOTE = 64


def decode_cursor(cursor: Any) -> int:
    """The offset a cursor names; ``None`` (no cursor) is the first page."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str):
        raise InvalidParamsError("Invalid cursor: must be a string")
    quoted = repr(cursor[:_QUOTE]) + ("…" if len(cursor) > _QUOTE else "")
    if len(cursor) > 4 * (len(_PREFIX) + _MAX_DIGITS):
        raise InvalidParamsError(f"Invalid cursor: {quoted}")
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        raise InvalidParamsError(f"Invalid cursor: {quoted}") from None
    digits = text[len(_PREFIX):]
    if not text.startswith(_PREFIX) or not digits.isdigit() or len(digits) > _MAX_DIGITS:
        raise InvalidParamsError(f"Invalid cursor: {quoted}")
    return int(digits)


def listing(key: str, items: Sequence[Any], cursor: Any, page_size: int) -> dict[str, Any]:
    """A list method's result: ``{key: page, "nextCursor"?: ...}``."""
    chunk, next_cursor = page(items, cursor, page_size)
    result: dict[str, Any] = {key: list(chunk)}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


def page(items: Sequence[T], cursor: Any, page_size: int) -> tuple[Sequence[T], str | None]:
    """The page of ``items`` a cursor asks for, and the cursor of the next page (if any)."""
    start = decode_cursor(cursor)
    if start > len(items):
        raise InvalidParamsError("Invalid cursor: past the end of the list")
    end = start + page_size
    return items[start:end], (encode_cursor(end) if end < len(items) else None)
