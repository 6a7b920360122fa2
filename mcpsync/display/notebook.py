"""How results look in a notebook, and a progress bar for calls.

Jupyter and IPython show an object through its ``_repr_html_`` / ``_repr_markdown_`` /
``_repr_png_`` / ``_repr_pretty_`` methods when it has them. :class:`Displayable` gives them
to the content blocks, and the other mixins here to :class:`~mcpsync.types.CallToolResult`,
:class:`~mcpsync.types.ReadResourceResult`, :class:`~mcpsync.types.GetPromptResult`,
:class:`~mcpsync.types.Tool`, the list :meth:`Client.list_tools
<mcpsync.Client.list_tools>` returns (a table) and :class:`~mcpsync.errors.MCPError`; an
image renders as an image, a blob is summarized (MIME type and size), never dumped. What
they show, and how untrusted text is escaped: :mod:`mcpsync.display.render`.

The types and the errors import this module, so every server does at start-up, and most
never display anything: the renderers and the lists a client returns
(:mod:`~mcpsync.display.render`), the progress bar and the schema's parameter names are
imported by their first use (PEP 562 for the names this module re-exports).

:func:`progress_bar` (from :mod:`mcpsync.display.progress`) is what ``on_progress="bar"``
makes: tqdm when it is installed, else a line of text on stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import exports
from .text import plain

if TYPE_CHECKING:  # (_e and _md: the hub's display escapes with them)
    from .progress import TextBar, progress_bar
    from .render import (
        MAX_INLINE_BYTES,
        PromptList,
        ResourceList,
        ResourceTemplateList,
        ToolList,
    )
    from .render import _e as _e
    from .render import _md as _md
    from .schema import parameters

_PNG = b"\x89PNG\r\n\x1a\n"


# -- the mixins the types use ----------------------------------------------------------


class Displayable:
    """Notebook display for a content block: HTML, Markdown, and for images the raw
    PNG/JPEG bytes (which a frontend shows when it prefers them to HTML)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .render import block_html

        return block_html(self)

    def _repr_markdown_(self) -> str:
        from .render import block_markdown

        return block_markdown(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(plain(self))

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
        from .render import decoded

        raw = decoded(data, mime_type) if isinstance(data, str) else None
        return raw if raw is not None and raw.startswith(magic) else None


class DisplayableResult:
    """Notebook display for a CallToolResult."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .render import result_html

        return result_html(self)

    def _repr_markdown_(self) -> str:
        from .render import result_markdown

        return result_markdown(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(plain(self))

    def _repr_png_(self) -> bytes | None:
        """The image when the result is exactly one PNG image."""
        content = getattr(self, "content", [])
        if len(content) == 1 and isinstance(content[0], Displayable):
            return content[0]._repr_png_()
        return None


class DisplayableContents:
    """Notebook display for a ReadResourceResult: text shown, blobs summarized (an image
    or audio blob small enough is shown as such)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .render import contents_list_html

        return contents_list_html(self)

    def _repr_markdown_(self) -> str:
        from .render import contents_list_markdown

        return contents_list_markdown(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(plain(self))


class DisplayablePrompt:
    """Notebook display for a GetPromptResult: each message under its role."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .render import prompt_html

        return prompt_html(self)

    def _repr_markdown_(self) -> str:
        from .render import prompt_markdown

        return prompt_markdown(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(plain(self))


class DisplayableTool:
    """Notebook display for one Tool: a one-row table."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .render import tools_html

        return tools_html([self])

    def _repr_markdown_(self) -> str:
        from .render import tools_markdown

        return tools_markdown([self])


class DisplayableError:
    """Notebook display for an MCPError (what IPython shows for a displayed exception
    object, e.g. one kept from ``except MCPError as exc``)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .render import error_html

        return error_html(self)

    def _repr_markdown_(self) -> str:
        from .render import error_markdown

        return error_markdown(self)


__all__ = [
    "MAX_INLINE_BYTES",
    "Displayable",
    "DisplayableContents",
    "DisplayableError",
    "DisplayablePrompt",
    "DisplayableResult",
    "DisplayableTool",
    "PromptList",
    "ResourceList",
    "ResourceTemplateList",
    "TextBar",
    "ToolList",
    "parameters",
    "progress_bar",
]

# The names re-exported from the modules a first display, list or progress bar imports.
__getattr__, __dir__ = exports(__name__, {
    "MAX_INLINE_BYTES": f"{__package__}.render", "_e": f"{__package__}.render",
    "ToolList": f"{__package__}.render", "ResourceList": f"{__package__}.render",
    "ResourceTemplateList": f"{__package__}.render", "PromptList": f"{__package__}.render",
    "_md": f"{__package__}.render", "TextBar": f"{__package__}.progress",
    "progress_bar": f"{__package__}.progress", "parameters": f"{__package__}.schema",
}, globals())
