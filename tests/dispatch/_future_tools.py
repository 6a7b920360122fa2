"""Tools defined under postponed evaluation of annotations (strings until resolved)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Where:
    x: float


def lookup(where: Where) -> float:
    return where.x
