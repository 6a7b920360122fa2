"""Log levels of ``notifications/message`` (RFC 5424 severities, least severe first)."""

from __future__ import annotations

from typing import Final

LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_RANK: Final = {level: rank for rank, level in enumerate(LEVELS)}

#: Python ``logging`` levels mapped onto the protocol's.
FROM_PYTHON: Final = {10: "debug", 20: "info", 30: "warning", 40: "error", 50: "critical"}


def is_level(value: object) -> bool:
    return isinstance(value, str) and value in _RANK


def at_least(level: str, minimum: str | None) -> bool:
    """Whether a message at ``level`` passes a ``minimum`` (``None``: everything passes)."""
    if minimum is None:
        return True
    return _RANK[level] >= _RANK[minimum]
