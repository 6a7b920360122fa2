"""Plain-text display of results and blocks, and the bounds every display shares.

IPython prints ``_repr_pretty_`` in a terminal and stores it as a notebook output's
``text/plain`` (computed alongside the HTML). A dataclass repr there would carry every byte
of a base64 blob and every character of a long text; :func:`plain` says what a blob is
(MIME type and size) and cuts text, so that displaying a result never dumps megabytes.
Like the rest of the display code it looks at attributes, not classes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

#: Longest text shown for one block (the rest is cut, with a note).
MAX_TEXT_CHARS = 100_000
#: Longest plain-text display (``_repr_pretty_``) of one result.
MAX_PLAIN_CHARS = 20_000

#: A base64 field longer than this is cut in a plain ``repr()``.
MAX_REPR_PAYLOAD = 64

#: A MIME type plain enough to name or to put into a ``data:`` URL. A pattern, compiled
#: (and cached by :mod:`re`) on first use: every server imports this module, and most
#: never display anything.
MIME_PATTERN = r"^[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*$"


def plain_mime(mime: str) -> bool:
    """Whether ``mime`` (lower-cased by the caller) is a MIME type plain enough to name or
    to put into a ``data:`` URL."""
    return re.match(MIME_PATTERN, mime) is not None


def cut(text: str) -> str:
    """``text`` up to :data:`MAX_TEXT_CHARS`, with a note of how much was left out."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS} more characters)"


def to_json(value: Any) -> str:
    """``value`` as indented JSON; its repr when it is not JSON (display never fails)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def blob_size(blob: object) -> int:
    """How many bytes a base64 payload holds, from its length (it is never decoded)."""
    if not isinstance(blob, str):
        return 0
    text = blob.rstrip()
    return max(0, len(text) * 3 // 4 - (len(text) - len(text.rstrip("="))))


def blob_summary(blob: object, mime: object) -> str:
    """A blob described instead of shown: ``blob, application/pdf, 1234 bytes``."""
    kind = mime if isinstance(mime, str) and plain_mime(mime.lower()) else "unknown type"
    return f"blob, {kind}, {blob_size(blob)} bytes"


def plain(value: Any) -> str:
    """A result or block as bounded plain text: what IPython prints in a terminal and
    stores as a notebook output's text/plain, where the dataclass repr would carry every
    byte of a base64 blob."""
    name = type(value).__name__
    if getattr(value, "type", None) is not None:  # one content block
        body = [_plain_block(value)]
    elif hasattr(value, "contents"):
        body = [_plain_contents(c) for c in value.contents]
    elif hasattr(value, "messages"):
        body = [f"{m.role}: {_plain_block(m.content)}" for m in value.messages]
        if value.description:
            body.insert(0, value.description)
    else:
        body = [_plain_block(block) for block in value.content]
        if value.structured_content is not None:
            body.append(f"structuredContent: {to_json(value.structured_content)}")
        if value.is_error:
            name += " (tool error)"
    text = "\n".join(body)
    if len(text) > MAX_PLAIN_CHARS:
        text = text[:MAX_PLAIN_CHARS] + f"\n… ({len(text) - MAX_PLAIN_CHARS} more characters)"
    return f"{name}:\n{text}" if text else f"{name}: (empty)"


def _plain_block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return cut(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}, {blob_summary(block.data, block.mime_type)}]"
    if kind == "resource_link":
        return f"[link {block.name}: {block.uri}]"
    if kind == "resource":
        return _plain_contents(block.resource)
    return to_json(block)


def _plain_contents(contents: Any) -> str:
    uri, mime = getattr(contents, "uri", ""), getattr(contents, "mime_type", None)
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return f"{uri}{f' ({mime})' if mime else ''}:\n{cut(text)}"
    return f"{uri}: [{blob_summary(getattr(contents, 'blob', None), mime)}]"


def elided_repr(value: Any, payload: str) -> str:
    """The dataclass repr of ``value`` with its base64 field ``payload`` cut when long.

    ``repr()`` is what a log line, an assertion message or ``print([result])`` shows; an
    image or blob of megabytes must not arrive there whole."""
    parts = []
    for spec in dataclasses.fields(value):
        if not spec.repr:
            continue
        item = getattr(value, spec.name)
        if spec.name == payload and isinstance(item, str) and len(item) > MAX_REPR_PAYLOAD:
            parts.append(f"{spec.name}=<{len(item)} characters of base64: "
                         f"{item[:24]!r}…>")
        else:
            parts.append(f"{spec.name}={item!r}")
    return f"{type(value).__qualname__}({', '.join(parts)})"


__all__ = ["MAX_PLAIN_CHARS", "MAX_TEXT_CHARS", "blob_size", "blob_summary", "cut",
           "elided_repr", "plain", "to_json"]
