"""The encoded size of a result, as the guards that bound or store answers measure it."""

from __future__ import annotations

import json
from typing import Any


def encode(result: Any) -> bytes:
    """``result`` as compact UTF-8 JSON: the bytes it costs on the wire (without the
    JSON-RPC envelope and the era's ``_meta``, which are the same for every answer)."""
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8", "replace")


__all__ = ["encode"]
