"""Resources, prompts, completion, and tools that ask the user — all plain blocking functions.

    python examples/notes_server.py        # a stdio server; see examples/notes_client.py
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from mcpsync import HandlerContext, ResourceNotFoundError, Server

server = Server("notes", version="1.0.0", instructions="A tiny notebook.")
_notes: dict[str, str] = {"welcome": "Hello from mcpsync."}
_lock = threading.Lock()


@server.resource("notes://all", mime_type="application/json")
def all_notes() -> dict[str, str]:
    """Every note, by title."""
    with _lock:
        return dict(_notes)


@server.resource("notes://note/{title}")
def note(title: str) -> str:
    """One note's text."""
    with _lock:
        if title not in _notes:
            raise ResourceNotFoundError(f"no note titled {title!r}")
        return _notes[title]


@server.completer("notes://note/{title}", "title")
def complete_title(value: str, context: dict[str, str]) -> list[str]:
    with _lock:
        return sorted(t for t in _notes if t.startswith(value))


@dataclass
class NewNote:
    title: str
    text: str = ""


@server.tool()
def add_note(ctx: HandlerContext) -> str:
    """Ask the user for a note and store it."""
    answer = ctx.elicit("What should the note say?", NewNote)
    if not answer.accepted:
        return f"nothing added ({answer.action})"
    with _lock:
        _notes[answer.data.title] = answer.data.text
    server.notify_resource_updated("notes://all")
    return f"added {answer.data.title!r}"


@server.tool()
def summarize_notes(ctx: HandlerContext) -> str:
    """Ask the client's model to summarize every note."""
    with _lock:
        text = "\n".join(f"{k}: {v}" for k, v in _notes.items())
    return ctx.sample(f"Summarize these notes:\n{text}", max_tokens=100).text


@server.prompt()
def review(title: str) -> str:
    """Review one note.

    Args:
        title: The note to review.
    """
    return f"Please review the note {title!r} and suggest improvements."


if __name__ == "__main__":
    server.run_stdio()
