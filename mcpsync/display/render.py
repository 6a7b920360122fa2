"""How results look in a notebook: the HTML and Markdown renderers behind the mixins of
:mod:`mcpsync.display.notebook`.

Everything a server sends is untrusted (a tool description or a text result may contain
``<script>``), so every string is HTML-escaped (in the Markdown too, where a JSON block is
escaped HTML, not a fence of raw text), MIME types and base64 are checked before they go
into a ``data:`` URL, and URIs are shown as text, never as links. Schemas are named by
:mod:`mcpsync.display.schema`, plain text by :mod:`mcpsync.display.text`.

The renderers look at attributes (``type``, ``text``, ``mime_type``…), not at classes: the
types import the mixins, so this module may not import them. Why a module apart from the
mixins: the types import the mixins, so every server does at start-up, and most never
display anything; this module is imported by the first display.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from .schema import parameters
from .text import (
    MAX_TEXT_CHARS,
    blob_summary,
    plain_mime,
)
from .text import cut as _cut
from .text import to_json as _json

#: Longest base64 payload put inline into HTML (an image or audio ``data:`` URL); a larger
#: one is described instead, so that a notebook never embeds an arbitrarily large blob.
MAX_INLINE_BYTES = 8 * 1024 * 1024

#: ASCII punctuation that means something to Markdown (``<``, ``>`` and ``&`` are
#: HTML-escaped instead, ``|`` becomes an entity in tables).
#: A pattern, compiled (and cached by :mod:`re`) on first use.
_MD_SYNTAX = r"[\\`*_\[\]()!#~:]"

_BLOCK_ENTITIES = str.maketrans({"[": "&#91;", "]": "&#93;", "`": "&#96;"})


def _e(value: object) -> str:
    import html

    return html.escape(str(value), quote=True)


def _md(value: object) -> str:
    """Text safe inside Markdown: HTML escaped (a Markdown renderer passes raw HTML
    through), Markdown's own syntax backslash-escaped (a description's
    ``![](https://tracker/pixel)`` would be fetched, ``[text](url)`` made a link), table
    pipes and line breaks neutralised."""
    return _e(re.sub(_MD_SYNTAX, r"\\\g<0>", str(value))).replace("|", "&#124;").replace(
        "\n", " ")


def _code(value: object) -> str:
    """Text for a Markdown code span (literal: no HTML escaping, nothing to close it)."""
    return str(value).replace("`", "'").replace("|", "\\|").replace("\n", " ")


def _block(text: str, lang: str = "") -> str:
    """A preformatted block for Markdown, as HTML with its content escaped.

    Not a fenced code block: the raw text of a fence would be in the Markdown string, and
    whether a ``</code>`` or ``<script>`` in it stays inert then depends on the renderer
    (and on everything else that handles the string). Escaped inside ``<pre>``, nothing in
    it is markup anywhere; a CommonMark renderer passes the block through as HTML.
    """
    cls = f' class="language-{_e(lang)}"' if lang else ""
    # Brackets and backticks as entities too: a renderer that (wrongly) reads Markdown
    # inside the block still finds no link, image or code span in it.
    body = _e(_cut(text)).translate(_BLOCK_ENTITIES)
    return f"<pre><code{cls}>{body}</code></pre>"


def _pre(text: str) -> str:
    return f'<pre style="white-space:pre-wrap;margin:0">{_e(_cut(text))}</pre>'


def decoded(data: str, mime_type: object) -> bytes | None:
    """The bytes of a base64 payload when it is well-formed, small enough to inline and
    of a plain MIME type; else None (the block is then described, not embedded)."""
    if not isinstance(mime_type, str) or not plain_mime(mime_type.lower()):
        return None
    if not isinstance(data, str) or len(data) > MAX_INLINE_BYTES * 4 // 3 + 4:
        return None
    import base64
    import binascii

    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _media_html(kind: str, data: str, mime_type: object) -> str:
    raw = decoded(data, mime_type)
    if raw is None:
        return f"<em>{_e(kind)} ({_e(mime_type)}, not shown: {_describe_bad(data)})</em>"
    import base64

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
    return head + f"<em>{_e(blob_summary(blob, mime))}</em>"


def block_markdown(block: Any) -> str:
    """One content block as Markdown (images inline as ``data:`` URLs when small)."""
    kind = getattr(block, "type", None)
    if kind == "text":  # preformatted, as in HTML: its line breaks kept, no Markdown
        pretty = _as_json_text(block.text)
        return _block(block.text) if pretty is None else _block(pretty, "json")
    if kind == "image":
        raw = decoded(block.data, block.mime_type)
        if raw is None:
            return f"*image ({_md(block.mime_type)}, not shown)*"
        import base64

        return (f"![image](data:{str(block.mime_type).lower()};base64,"
                f"{base64.b64encode(raw).decode()})")
    if kind == "audio":
        return f"*audio ({_md(block.mime_type)})*"
    if kind == "resource_link":
        return f"🔗 **{_md(block.name)}** `{_code(block.uri)}`"
    if kind == "resource":
        return contents_markdown(block.resource)
    return _block(_json(block))


def contents_markdown(contents: Any) -> str:
    """Resource contents as Markdown: the URI, then the text or what the blob is."""
    mime = getattr(contents, "mime_type", None)
    head = f"`{_code(getattr(contents, 'uri', ''))}`" + (f" ({_md(mime)})" if mime else "")
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        pretty = _as_json_text(text)
        body = _block(text) if pretty is None else _block(pretty, "json")
        return f"{head}\n\n{body}"
    return f"{head} *({_md(blob_summary(getattr(contents, 'blob', None), mime))})*"


def _as_json_text(text: str) -> str | None:
    """``text`` indented, when it is a JSON object or array (a tool's result is often a
    dict sent as text); else None."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or len(stripped) > MAX_TEXT_CHARS:
        return None
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return None


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
        parts.append(_block(_json(result.structured_content), "json"))
    if result.is_error:
        parts.insert(0, "**Tool error**")
    return "\n\n".join(parts) or "*(no content)*"


def contents_list_html(result: Any) -> str:
    """A ReadResourceResult: each of its contents, text shown and blobs summarized."""
    parts = [contents_html(contents) for contents in result.contents]
    return "<div>" + ("".join(parts) or "<em>(no contents)</em>") + "</div>"


def contents_list_markdown(result: Any) -> str:
    return "\n\n".join(contents_markdown(c) for c in result.contents) or "*(no contents)*"


def prompt_html(result: Any) -> str:
    """A GetPromptResult: its description, then each message under its role."""
    parts = [f"<p><em>{_e(result.description)}</em></p>"] if result.description else []
    for message in result.messages:
        parts.append(f"<div><b>{_e(message.role)}</b>{block_html(message.content)}</div>")
    if not result.messages:
        parts.append("<em>(no messages)</em>")
    return "<div>" + "".join(parts) + "</div>"


def prompt_markdown(result: Any) -> str:
    parts = [f"*{_md(result.description)}*"] if result.description else []
    parts.extend(f"**{_md(message.role)}**\n\n{block_markdown(message.content)}"
                 for message in result.messages)
    return "\n\n".join(parts) or "*(no messages)*"


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


#: The columns of each listed kind: (header, how an item gives it, shown as code).
_Column = tuple[str, Callable[[Any], str], bool]


def _prompt_arguments(prompt: Any) -> str:
    return ", ".join(f"{a.name}{'*' if a.required else ''}" for a in prompt.arguments or ())


_COLUMNS: dict[str, tuple[_Column, ...]] = {
    "resources": (("uri", lambda r: r.uri, True), ("name", lambda r: r.name, False),
                  ("description", lambda r: r.description or r.title or "", False),
                  ("MIME type", lambda r: r.mime_type or "", False)),
    "resource templates": (
        ("URI template", lambda t: t.uri_template, True), ("name", lambda t: t.name, False),
        ("description", lambda t: t.description or t.title or "", False),
        ("MIME type", lambda t: t.mime_type or "", False)),
    "prompts": (("name", lambda p: p.name, False),
                ("description", lambda p: p.description or p.title or "", False),
                ("arguments (*: required)", _prompt_arguments, True)),
}


def listing_html(kind: str, items: Iterable[Any]) -> str:
    """``items`` of ``kind`` (a key of the columns: resources, resource templates,
    prompts) as an HTML table, every server string escaped."""
    columns = _COLUMNS[kind]
    rows = []
    for item in items:
        cells = []
        for _, value, code in columns:
            text = _e(value(item))
            shown = f"<code>{text}</code>" if code and text else text
            cells.append(f'<td style="text-align:left">{shown}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if not rows:
        return f"<em>(no {kind})</em>"
    head = "".join(f"<th>{_e(header)}</th>" for header, _, _ in columns)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def listing_markdown(kind: str, items: Iterable[Any]) -> str:
    columns = _COLUMNS[kind]
    lines = ["| " + " | ".join(header for header, _, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    for item in items:
        cells = [(f"`{_code(value(item))}`" if code and value(item) else _md(value(item)))
                 for _, value, code in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) if len(lines) > 2 else f"*(no {kind})*"


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
    return text if data is None else f"{text}\n\n{_block(_json(data))}"


# -- the lists a client returns (re-exported by notebook.py, imported by their first use) --


class ToolList(list[Any]):
    """What :meth:`Client.list_tools <mcpsync.Client.list_tools>` returns: a plain list
    of :class:`~mcpsync.types.Tool` that a notebook shows as a table."""

    def _repr_html_(self) -> str:
        return tools_html(self)

    def _repr_markdown_(self) -> str:
        return tools_markdown(self)


class _Listing(list[Any]):
    """A plain list a notebook shows as a table of its ``kind``."""

    kind = ""

    def _repr_html_(self) -> str:
        return listing_html(self.kind, self)

    def _repr_markdown_(self) -> str:
        return listing_markdown(self.kind, self)


class ResourceList(_Listing):
    """What :meth:`Client.list_resources <mcpsync.Client.list_resources>` returns."""

    kind = "resources"


class ResourceTemplateList(_Listing):
    """What :meth:`Client.list_resource_templates
    <mcpsync.Client.list_resource_templates>` returns."""

    kind = "resource templates"


class PromptList(_Listing):
    """What :meth:`Client.list_prompts <mcpsync.Client.list_prompts>` returns."""

    kind = "prompts"
