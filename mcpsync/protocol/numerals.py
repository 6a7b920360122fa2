"""Decimal numbers in hostile text (header values, SSE fields). Sans-IO, pure."""

from __future__ import annotations


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
