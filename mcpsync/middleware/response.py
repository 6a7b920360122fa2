"""``ResponseLimit``: a tool result larger than ``max_bytes`` (encoded) does not go out.

Measured on the encoded JSON of the result, the bytes the client would receive and an LLM
would be handed. By default the call fails *as a tool error* (``isError``), so the model
reads why and may ask for less; with ``truncate=True`` the text content is cut to fit and
the result says so (a result with ``structuredContent``, which can not be cut without
breaking its schema, still becomes the error).
"""

from __future__ import annotations

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
        if self.truncate and "structuredContent" not in result:
            cut = self._truncated(result, size)
            if cut is not None:
                return cut
        return {"content": [{"type": "text", "text": (
            f"The result of {params.get('name')!r} was {size} bytes, over this server's "
            f"limit of {self.max_bytes} bytes; ask for less (a narrower query, a page).")}],
            "isError": True}

    def _truncated(self, result: dict[str, Any], size: int) -> dict[str, Any] | None:
        """The result with its text blocks cut (from the last) to fit, or ``None`` when
        cutting text can not make it fit (images, resources)."""
        note = _NOTE.format(limit=self.max_bytes)
        blocks = [dict(block) for block in result.get("content") or []]
        excess = size - self.max_bytes + len(encode(note)) + 16
        for block in reversed(blocks):
            if excess <= 0:
                break
            text = block.get("text") if block.get("type") == "text" else None
            if not isinstance(text, str) or not text:
                continue
            encoded = text.encode("utf-8")
            keep = max(0, len(encoded) - excess)
            cut = encoded[:keep].decode("utf-8", "ignore")
            excess -= len(encode(text)) - len(encode(cut))
            block["text"] = cut
        if excess > 0:
            return None
        texts = [block for block in blocks if block.get("type") == "text"]
        if not texts:
            return None
        texts[-1]["text"] += note
        out = {**result, "content": blocks}
        return out if len(encode(out)) <= self.max_bytes else None

    def __repr__(self) -> str:
        return f"ResponseLimit({self.max_bytes})"


__all__ = ["ResponseLimit"]
