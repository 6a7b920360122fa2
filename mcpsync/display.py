"""How results look in a notebook, and a progress bar for calls.

Jupyter and IPython show an object through its ``_repr_html_`` / ``_repr_markdown_`` /
``_repr_png_`` methods when it has them. :class:`Displayable` gives them to the content
blocks, :class:`~mcpsync.types.CallToolResult`, :class:`~mcpsync.types.Tool`, the list
:meth:`Client.list_tools <mcpsync.Client.list_tools>` returns (a table) and
:class:`~mcpsync.errors.MCPError`; an image renders as an image, not as a base64 dump.

Everything a server sends is untrusted (a tool description or a text result may contain
``<script>``), so every string is HTML-escaped, MIME types and base64 are checked before they
go into a ``data:`` URL, and URIs are shown as text, never as links.

The renderers look at attributes (``type``, ``text``, ``mime_type``…), not at classes: the
types import this module, so it may not import them.

:func:`progress_bar` is what ``on_progress="bar"`` makes: tqdm when it is installed, else a
one-line text bar on stderr.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import re
import sys
from collections.abc import Iterable
from typing import IO, Any

#: Longest base64 payload put inline into HTML (an image or audio ``data:`` URL); a larger
#: one is described instead, so that a notebook never embeds an arbitrarily large blob.
MAX_INLINE_BYTES = 8 * 1024 * 1024
#: Longest text shown for one block (the rest is cut, with a note).
MAX_TEXT_CHARS = 100_000

_MIME = re.compile(r"^[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*$")
_PNG = b"\x89PNG\r\n\x1a\n"


def _e(value: object) -> str:
    import html  # on first display: errors import this module, notebooks display them

    return html.escape(str(value), quote=True)


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS} more characters)"


def _md(value: object) -> str:
    """Text safe inside Markdown: HTML escaped (a Markdown renderer passes raw HTML
    through), table pipes and line breaks neutralised."""
    return _e(value).replace("|", "&#124;").replace("\n", " ")


def _code(value: object) -> str:
    """Text for a Markdown code span (literal: no HTML escaping, nothing to close it)."""
    return str(value).replace("`", "'").replace("|", "\\|").replace("\n", " ")


def _fence(text: str, lang: str = "") -> str:
    """A fenced Markdown block whose content cannot close the fence."""
    return f"```{lang}\n{_cut(text).replace('```', '`` `')}\n```"


def _pre(text: str) -> str:
    return f'<pre style="white-space:pre-wrap;margin:0">{_e(_cut(text))}</pre>'


def _json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def decoded(data: str, mime_type: object) -> bytes | None:
    """The bytes of a base64 payload when it is well-formed, small enough to inline and
    of a plain MIME type; else None (the block is then described, not embedded)."""
    if not isinstance(mime_type, str) or not _MIME.match(mime_type.lower()):
        return None
    if not isinstance(data, str) or len(data) > MAX_INLINE_BYTES * 4 // 3 + 4:
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _media_html(kind: str, data: str, mime_type: object) -> str:
    raw = decoded(data, mime_type)
    if raw is None:
        return f"<em>{_e(kind)} ({_e(mime_type)}, not shown: {_describe_bad(data)})</em>"
    url = f"data:{_e(str(mime_type).lower())};base64,{_e(base64.b64encode(raw).decode())}"
    if kind == "image":
        return f'<img src="{url}" alt="image ({_e(mime_type)})" style="max-width:100%"/>'
    return f'<audio controls src="{url}"></audio>'


def _describe_bad(data: object) -> str:
    if not isinstance(data, str):
        return "no data"
    if len(data) > MAX_INLINE_BYTES * 4 // 3 + 4:
        return f"{len(data)} characters of base64, more than the inline bound"
    return "not valid base64 of a known MIME type"


# -- one block -------------------------------------------------------------------------


def block_html(block: Any) -> str:
    """One content block (or resource contents) as HTML."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return _pre(block.text)
    if kind in ("image", "audio"):
        return _media_html(kind, block.data, block.mime_type)
    if kind == "resource_link":
        described = f" — {_e(block.description)}" if block.description else ""
        return f"<div>🔗 <b>{_e(block.name)}</b> <code>{_e(block.uri)}</code>{described}</div>"
    if kind == "resource":
        return contents_html(block.resource)
    if isinstance(block, dict):
        return _pre(_json(block))
    return _pre(repr(block))


def contents_html(contents: Any) -> str:
    """Resource contents (text or blob) as HTML: a header with the URI, then the body."""
    uri = getattr(contents, "uri", "")
    mime = getattr(contents, "mime_type", None)
    head = f"<div><code>{_e(uri)}</code>{f' ({_e(mime)})' if mime else ''}</div>"
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return head + _pre(text)
    blob = getattr(contents, "blob", None)
    if isinstance(mime, str) and mime.lower().startswith(("image/", "audio/")) and blob:
        return head + _media_html(mime.split("/")[0].lower(), blob, mime)
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0  # about: never decoded
    return head + f"<em>about {size} bytes</em>"


def block_markdown(block: Any) -> str:
    """One content block as Markdown (images inline as ``data:`` URLs when small)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return _e(_cut(block.text))
    if kind == "image":
        raw = decoded(block.data, block.mime_type)
        if raw is None:
            return f"*image ({_md(block.mime_type)}, not shown)*"
        return (f"![image](data:{str(block.mime_type).lower()};base64,"
                f"{base64.b64encode(raw).decode()})")
    if kind == "audio":
        return f"*audio ({_md(block.mime_type)})*"
    if kind == "resource_link":
        return f"🔗 **{_md(block.name)}** `{_code(block.uri)}`"
    if kind == "resource":
        contents = block.resource
        text = getattr(contents, "text", None)
        head = f"`{_code(getattr(contents, 'uri', ''))}`"
        if isinstance(text, str):
            return f"{head}\n\n{_fence(text)}"
        return f"{head} *(blob)*"
    return _fence(_json(block))


# -- results, tools, errors ------------------------------------------------------------


def result_html(result: Any) -> str:
    """A CallToolResult: its blocks in order, structured content as JSON, framed in red
    when ``is_error``."""
    parts = [block_html(block) for block in result.content]
    if result.structured_content is not None:
        parts.append("<details><summary>structuredContent</summary>"
                     f"{_pre(_json(result.structured_content))}</details>")
    if not parts:
        parts.append("<em>(no content)</em>")
    if result.is_error:
        return ('<div style="border-left:4px solid #c00;padding-left:8px">'
                "<b style=\"color:#c00\">Tool error</b>" + "".join(parts) + "</div>")
    return "<div>" + "".join(parts) + "</div>"


def result_markdown(result: Any) -> str:
    parts = [block_markdown(block) for block in result.content]
    if result.structured_content is not None:
        parts.append(_fence(_json(result.structured_content), "json"))
    if result.is_error:
        parts.insert(0, "**Tool error**")
    return "\n\n".join(parts) or "*(no content)*"


def parameters(schema: object) -> list[str]:
    """``name: type`` for each property of an input schema; required ones end with ``*``."""
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties")
    required = schema.get("required") or []
    if not isinstance(props, dict):
        return []
    out = []
    for name, spec in props.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):
            kind = " | ".join(map(str, kind))
        elif kind is None and isinstance(spec, dict):
            kind = "enum" if "enum" in spec else "any"
        star = "*" if isinstance(required, list) and name in required else ""
        out.append(f"{name}{star}: {kind}")
    return out


def tools_html(tools: Iterable[Any]) -> str:
    """Tools as a table of name, description and parameters (``*``: required)."""
    rows = []
    for tool in tools:
        params = "<br/>".join(f"<code>{_e(p)}</code>" for p in parameters(tool.input_schema))
        description = tool.description or tool.title or ""
        rows.append(f"<tr><td><b>{_e(tool.name)}</b></td>"
                    f'<td style="text-align:left">{_e(description)}</td>'
                    f'<td style="text-align:left">{params}</td></tr>')
    if not rows:
        return "<em>(no tools)</em>"
    return ("<table><thead><tr><th>name</th><th>description</th><th>parameters</th></tr>"
            "</thead><tbody>" + "".join(rows) + "</tbody></table>")


def tools_markdown(tools: Iterable[Any]) -> str:
    lines = ["| name | description | parameters |", "|---|---|---|"]
    for tool in tools:
        params = ", ".join(f"`{_code(p)}`" for p in parameters(tool.input_schema))
        lines.append(f"| **{_md(tool.name)}** | {_md(tool.description or tool.title or '')} "
                     f"| {params} |")
    return "\n".join(lines) if len(lines) > 2 else "*(no tools)*"


def error_html(error: Any) -> str:
    data = getattr(error, "data", None)
    detail = "" if data is None else _pre(_json(data))
    return ('<div style="border-left:4px solid #c00;padding-left:8px">'
            f'<b style="color:#c00">{_e(type(error).__name__)}</b> '
            f"({_e(getattr(error, 'code', ''))}): {_e(getattr(error, 'message', error))}"
            f"{detail}</div>")


def error_markdown(error: Any) -> str:
    data = getattr(error, "data", None)
    text = (f"**{_md(type(error).__name__)}** ({_md(getattr(error, 'code', ''))}): "
            f"{_md(getattr(error, 'message', error))}")
    return text if data is None else f"{text}\n\n{_fence(_json(data))}"


# -- the mixins the types use ----------------------------------------------------------


class Displayable:
    """Notebook display for a content block: HTML, Markdown, and for images the raw
    PNG/JPEG bytes (which a frontend shows when it prefers them to HTML)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return block_html(self)

    def _repr_markdown_(self) -> str:
        return block_markdown(self)

    def _repr_png_(self) -> bytes | None:
        return self._image("image/png", _PNG)

    def _repr_jpeg_(self) -> bytes | None:
        return self._image("image/jpeg", b"\xff\xd8")

    def _image(self, mime: str, magic: bytes) -> bytes | None:
        if getattr(self, "type", None) != "image":
            return None
        data, mime_type = getattr(self, "data", None), getattr(self, "mime_type", None)
        if not isinstance(mime_type, str) or mime_type.lower() != mime:
            return None
        raw = decoded(data, mime_type) if isinstance(data, str) else None
        return raw if raw is not None and raw.startswith(magic) else None


class DisplayableResult:
    """Notebook display for a CallToolResult."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return result_html(self)

    def _repr_markdown_(self) -> str:
        return result_markdown(self)

    def _repr_png_(self) -> bytes | None:
        """The image when the result is exactly one PNG image."""
        content = getattr(self, "content", [])
        if len(content) == 1 and isinstance(content[0], Displayable):
            return content[0]._repr_png_()
        return None


class DisplayableTool:
    """Notebook display for one Tool: a one-row table."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return tools_html([self])

    def _repr_markdown_(self) -> str:
        return tools_markdown([self])


class DisplayableError:
    """Notebook display for an MCPError (what IPython shows for a displayed exception
    object, e.g. one kept from ``except MCPError as exc``)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return error_html(self)

    def _repr_markdown_(self) -> str:
        return error_markdown(self)


class ToolList(list[Any]):
    """What :meth:`Client.list_tools <mcpsync.Client.list_tools>` returns: a plain list
    of :class:`~mcpsync.types.Tool` that a notebook shows as a table."""

    def _repr_html_(self) -> str:
        return tools_html(self)

    def _repr_markdown_(self) -> str:
        return tools_markdown(self)


# -- progress ----------------------------------------------------------------------------


class TextBar:
    """A one-line progress bar redrawn in place on ``stream`` (stderr), for when tqdm is
    not installed. Without a ``total`` it shows the count and the message."""

    WIDTH = 30

    def __init__(self, description: str = "", stream: IO[str] | None = None) -> None:
        self.description = description
        self.stream = stream if stream is not None else sys.stderr
        self._drawn = False

    def __call__(self, progress: Any) -> None:
        total = getattr(progress, "total", None)
        done = float(getattr(progress, "progress", 0.0))
        message = getattr(progress, "message", None) or ""
        label = f"{self.description}: " if self.description else ""
        if total:
            fraction = max(0.0, min(1.0, done / float(total)))
            filled = round(fraction * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            line = f"{label}[{bar}] {fraction:4.0%} {_number(done)}/{_number(total)}"
        else:
            line = f"{label}{_number(done)}"
        if message:
            line += f" {message}"
        line = "".join(ch if ch.isprintable() else " " for ch in line)[:200]
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def _whole(value: Any) -> float | int:
    """An integral float as an int (tqdm shows ``4/4``, not ``4.0/4.0``)."""
    number = float(value)
    return int(number) if number.is_integer() else number


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class _TqdmBar:
    """The same, drawn by tqdm (which also knows notebooks: ``tqdm.auto``)."""

    def __init__(self, description: str, tqdm: Any) -> None:
        self._bar = tqdm(desc=description or None, total=None, leave=True)

    def __call__(self, progress: Any) -> None:
        total = getattr(progress, "total", None)
        if total is not None and self._bar.total != total:
            self._bar.total = _whole(total)
        self._bar.n = _whole(getattr(progress, "progress", 0.0))
        message = getattr(progress, "message", None)
        if message:
            self._bar.set_postfix_str(str(message), refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        self._bar.close()


def progress_bar(description: str = "", *, stream: IO[str] | None = None,
                 use_tqdm: bool | None = None) -> TextBar | _TqdmBar:
    """A progress handler drawing a bar: pass it as ``on_progress=`` and call ``close()``
    when the call returns (``on_progress="bar"`` does both for you).

    tqdm (``tqdm.auto``: a widget in a notebook) when it is installed and ``use_tqdm`` is
    not False; else a :class:`TextBar` on ``stream`` (stderr).
    """
    if use_tqdm is not False and stream is None:
        try:
            tqdm = importlib.import_module("tqdm.auto").tqdm  # optional: no hard dependency
        except ImportError:
            if use_tqdm:
                raise
        else:
            return _TqdmBar(description, tqdm)
    return TextBar(description, stream)


__all__ = [
    "MAX_INLINE_BYTES",
    "Displayable",
    "DisplayableError",
    "DisplayableResult",
    "DisplayableTool",
    "TextBar",
    "ToolList",
    "progress_bar",
]
