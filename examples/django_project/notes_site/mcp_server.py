"""The MCP server of the example project: blocking tools over the same data as the views."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from django.conf import settings

from mcpsync import HandlerContext, Server, ToolError

BOOKS: dict[str, int] = {"Dune": 1965, "Neuromancer": 1984}
LOCK = threading.Lock()

# At 2026-07-28, elicitation is a multi round-trip request whose state the server signs:
# a key from the settings lets every worker process accept every other's rounds.
server = Server("django-books", version="1.0.0",
                instructions="The same books as the site's /books/ page.",
                request_state_key="mcp-request-state:" + settings.SECRET_KEY)


@dataclass
class Book:
    title: str
    year: int


@server.tool()
def add_book(title: str, year: int) -> str:
    """Add a book to the catalogue."""
    with LOCK:
        BOOKS[title] = year
    return f"added {title!r}"


@server.tool()
def find_book(ctx: HandlerContext, title: str) -> Book:
    """Look a book up (structured output), reporting progress."""
    ctx.progress(1, total=1, message="searching")
    with LOCK:
        year = BOOKS.get(title)
    if year is None:
        raise ToolError(f"no book {title!r}")  # for the model: its text is sent
    return Book(title=title, year=year)


@dataclass
class Rating:
    stars: int


@server.tool()
def rate_book(ctx: HandlerContext, title: str) -> str:
    """Ask the user for a rating (elicitation: a request in a session, a round at 2026-07-28)."""
    answer = ctx.elicit(f"How many stars for {title}?", Rating)
    if not answer.accepted:
        return f"no rating ({answer.action})"
    return f"{title}: {answer.data.stars} stars"


@server.resource("books://catalogue", mime_type="application/json")
def catalogue() -> dict[str, int]:
    """Every book and its year."""
    with LOCK:
        return dict(BOOKS)
