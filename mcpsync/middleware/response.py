"""``ResponseLimit``: a tool result larger than ``max_bytes`` (encoded) does not go out.

Measured on the encoded JSON of the result, the bytes the client would receive and an LLM
would be handed. By default the call fails *as a tool error* (``isError``), so the model
reads why and may ask for less; with ``truncate=True`` the text content is cut to fit and
the result says so (the strings of ``structuredContent`` are cut alike, which keeps them
strings; a result cutting strings can not bring under the bound still becomes the error).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..dispatch.context import HandlerContext
from ..server.handlers import MethodHandler
from .encoded import encode
from .request import Selection

_NOTE = "\n[truncated: the result exceeded {limit} bytes]"


class ResponseLimit:
    """``ResponseLimit(1_000_000, tools=None, truncate=False)``: bound ``tools/call``
    results (``tools``: only these tools; ``None``: all) to ``max_bytes`` encoded."""

    def __init__(self, max_bytes: int, *, tools: Iterable[str] | None = None,
                 truncate: bool = False) -> None:
        if max_bytes < 64:
            raise ValueError("ResponseLimit(max_bytes): at least 64")
        self.max_bytes = max_bytes
        self.truncate = truncate
        self._selection = Selection(("tools/call",), tools)

    def __call__(self, ctx: HandlerContext, params: dict[str, Any],
                 next_: MethodHandler) -> dict[str, Any]:
        result = next_(ctx, params)
        if (ctx.method, params) not in self._selection or result.get("resultType") == "task":
            return result
        size = len(encode(result))
        if size <= self.max_bytes:
            return result
        if self.truncate:
            cut = self._truncated(result, size)
            if cut is not None:
                return cut
        return {"content": [{"type": "text", "text": (
            f"The result of {params.get('name')!r} was {size} bytes, over this server's "
            f"limit of {self.max_bytes} bytes; ask for less (a narrower query, a page).")}],
            "isError": True}

    def _truncated(self, result: dict[str, Any], size: int) -> dict[str, Any] | None:
        """The result with its longest strings cut to fit (text blocks, and the strings of
        ``structuredContent``, which keep their type: an output schema of strings still
        holds), the last text block saying so; ``None`` when cutting strings can not make
        it fit (images, many small fields)."""
        note = _NOTE.format(limit=self.max_bytes)
        out: dict[str, Any] = json.loads(encode(result))  # a deep copy to cut
        leaves: list[tuple[Any, Any, int]] = []  # (container, key, encoded length)
        for block in out.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(
                    block.get("text"), str):
                leaves.append((block, "text", len(encode(block["text"]))))
        _strings(out.get("structuredContent"), leaves)
        total = sum(length for _, _, length in leaves)
        excess = size - self.max_bytes + len(encode(note))
        if not leaves or excess >= total:
            return None
        # Every string keeps the same share of itself (the text and its structured copy
        # alike); escapes make the encoded cut a little uneven: a few rounds settle it.
        originals = [(container, key, container[key]) for container, key, _ in leaves]
        share = (total - excess) / total
        for _ in range(8):
            for container, key, text in originals:
                encoded = text.encode("utf-8")
                container[key] = encoded[:int(len(encoded) * share)].decode("utf-8", "ignore")
            over = len(encode(out)) + len(encode(note)) - 2 - self.max_bytes
            if over <= 0:
                break
            share = max(0.0, share - over / total - 0.001)
        else:
            return None
        texts = [block for block in out.get("content") or []
                 if isinstance(block, dict) and block.get("type") == "text"]
        if not texts:
            return None
        texts[-1]["text"] += note
        return out if len(encode(out)) <= self.max_bytes else None

    def __repr__(self) -> str:
        return f"ResponseLimit({self.max_bytes})"


def _strings(value: Any, into: list[tuple[Any, Any, int]]) -> None:
    """Every string leaf under ``value`` as (container, key, encoded length)."""
    items: Any = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        if isinstance(item, str):
            into.append((value, key, len(encode(item))))
        else:
            _strings(item, into)


__all__ = ["ResponseLimit"]
