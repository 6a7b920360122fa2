"""A Flask app with its own pages and an MCP endpoint at /mcp, sharing one notes store.

    python examples/flask_app.py            # http://127.0.0.1:5000/ and .../mcp
    python examples/flask_app.py --port 8080
    gunicorn --worker-class gthread --workers 1 --threads 16 --chdir examples flask_app:app

Flask keeps its routes (``/``, ``/notes``); ``mcpsync.http.mount`` sends ``/mcp`` to the
MCP server. The MCP tools are plain blocking functions, like Flask views. Use one worker
process (with threads): handshake-era MCP sessions live in the process that created them.
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass

from flask import Flask, jsonify, request

from mcpsync import HandlerContext, Server, ToolError
from mcpsync.http import mount

NOTES: dict[str, str] = {"welcome": "Notes added over MCP show up at /notes."}
LOCK = threading.Lock()

server = Server("flask-notes", version="1.0.0",
                instructions="Notes shared with the Flask app's /notes page.")


@dataclass
class NoteList:
    titles: list[str]
    count: int


@server.tool()
def add_note(title: str, body: str) -> str:
    """Add (or replace) a note."""
    with LOCK:
        NOTES[title] = body
    return f"saved {title!r}"


@server.tool()
def list_notes() -> NoteList:
    """The titles of all notes (structured output)."""
    with LOCK:
        titles = sorted(NOTES)
    return NoteList(titles=titles, count=len(titles))


@server.tool()
def read_note(ctx: HandlerContext, title: str) -> str:
    """One note's body; reports progress while it 'looks' for it."""
    ctx.progress(1, total=2, message="looking")
    with LOCK:
        body = NOTES.get(title)
    ctx.progress(2, total=2, message="found" if body is not None else "missing")
    if body is None:
        raise ToolError(f"no note {title!r}")  # for the model: its text is sent
    return body


app = Flask(__name__)


@app.get("/")
def index() -> str:
    return "Flask notes: see /notes; MCP clients connect to /mcp\n"


@app.get("/notes")
def notes() -> object:
    with LOCK:
        return jsonify(NOTES)


@app.post("/notes")
def create_note() -> object:
    data = request.get_json(force=True)
    with LOCK:
        NOTES[str(data["title"])] = str(data["body"])
    return jsonify({"saved": data["title"]}), 201


# Everything under /mcp goes to the MCP endpoint; the rest stays Flask's.
app.wsgi_app = mount(app.wsgi_app, server, "/mcp")  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    print(f"serving on http://{args.host}:{args.port}/ (MCP at /mcp)", file=sys.stderr)
    # threaded: an SSE response holds its thread while it lasts.
    app.run(host=args.host, port=args.port, threaded=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
