"""The server the ``mcpsync`` client subcommands are tested against (tests/test_cli_surface.py):
tools whose parameters cover every JSON type (so ``key=value`` typing can be checked by what
the tool receives), fixed resources (text and blob), a template, prompts with required and
optional arguments, ``bare``: a server with tools only, and ``partial``.

Run as a script it serves ``server`` over stdio (``bare`` with the argument ``bare``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mcpsync import MethodNotFoundError, ResourceNotFoundError, Server

server = Server("surface", version="2.5.0", title="Surface \x1b[31mtest\x1b[0m",
                instructions="Use the tools.\nRead the notes.")


@server.tool()
def typed(count: int = 0, ratio: float = 0.0, flag: bool = False, name: str = "",
          options: dict[str, Any] | None = None, items: list[int] | None = None,
          maybe: int | None = 5) -> str:
    """Say what arrived, with its Python type, as JSON."""
    received = {"count": count, "ratio": ratio, "flag": flag, "name": name,
                "options": options, "items": items, "maybe": maybe}
    return json.dumps({k: [v, type(v).__name__] for k, v in received.items()}, sort_keys=True)


@server.tool(input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                           "additionalProperties": True})
def loose(**anything: Any) -> str:
    """Whatever arrives, as JSON (a schema that names only ``text`` and allows others)."""
    return json.dumps(anything, sort_keys=True)


@server.resource("notes://readme", mime_type="text/markdown")
def readme() -> str:
    """The read-me."""
    return "# Notes\nline two \x1b[2J"


@server.resource("notes://logo", mime_type="image/png")
def logo() -> bytes:
    """A small image."""
    return b"\x89PNG\r\n\x1a\n" + b"\0" * 24


@server.resource("notes://note/{title}")
def note(title: str) -> str:
    """One note by title."""
    if title == "long":
        return "x" * 150_000
    if title != "first":
        raise ResourceNotFoundError(f"no note titled {title!r}")
    return "the first note"


@server.prompt(title="Review a note")
def review(title: str, tone: str = "friendly") -> str:
    """Review one note.

    Args:
        title: The note to review.
        tone: How to phrase it.
    """
    return f"Please review {title!r} in a {tone} tone."


@server.prompt()
def chat(topic: str) -> list[Any]:
    """A short exchange."""
    return [f"Tell me about {topic}.",
            {"role": "assistant", "content": {"type": "text", "text": "Gladly."}}]


bare = Server("bare", version="0.1.0")


@bare.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


#: A server with resources whose ``resources/templates/list`` answers "method not found" (as
#: an older server may): the templates are shown as not offered, the rest as usual.
partial = Server("partial", version="0.2.0")


@partial.resource("partial://only")
def only() -> str:
    return "the only resource"


@partial.method_handler("resources/templates/list")
def no_templates(ctx: Any, params: Any) -> Any:
    raise MethodNotFoundError("Method not found: resources/templates/list")


if __name__ == "__main__":
    {"bare": bare, "partial": partial}.get(sys.argv[1] if sys.argv[1:] else "", server
                                           ).run_stdio()
