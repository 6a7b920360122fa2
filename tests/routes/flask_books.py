"""A real Flask app documented with apispec (YAML in the views' docstrings), used by the
routes tests: books to list, read, create (editors only: ``REMOTE_USER`` ``alice``) and
delete, a cover image, and an undocumented health check."""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask, Response, abort, jsonify, request

#: Where each view ran last (the thread), to show a call came in process.
SEEN: dict[str, int] = {}
EDITORS = frozenset({"alice"})
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


def make_app() -> Flask:
    app = Flask("books")
    books: dict[int, dict[str, Any]] = {
        1: {"id": 1, "title": "Dune", "author": "Herbert", "tags": ["sf"]},
        2: {"id": 2, "title": "Emma", "author": "Austen", "tags": ["classic"]},
    }
    lock = threading.Lock()

    @app.get("/books")
    def list_books() -> Any:
        """List the books, optionally by author or tag.
        ---
        get:
          operationId: list_books
          tags: [books]
          parameters:
            - {name: author, in: query, schema: {type: string}, description: "Only this author"}
            - name: tag
              in: query
              schema: {type: array, items: {type: string}}
            - {name: limit, in: query, schema: {type: integer, minimum: 1, default: 10}}
          responses:
            200:
              description: The books
              content:
                application/json:
                  schema:
                    type: array
                    items:
                      type: object
                      properties:
                        id: {type: integer}
                        title: {type: string}
                        author: {type: string}
                        tags: {type: array, items: {type: string}}
                      required: [id, title]
        """
        SEEN["list_books"] = threading.get_ident()
        author = request.args.get("author")
        tags = set(request.args.getlist("tag"))
        limit = int(request.args.get("limit", 10))
        with lock:
            found = [b for b in books.values() if (author is None or b["author"] == author)
                     and tags <= set(b["tags"])]
        return jsonify(found[:limit])

    @app.post("/books")
    def create_book() -> Any:
        """Add a book (editors only).
        ---
        post:
          operationId: create_book
          tags: [books, editing]
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  properties:
                    id: {type: integer, readOnly: true}
                    title: {type: string, minLength: 1}
                    author: {type: string}
                    tags: {type: array, items: {type: string}}
                  required: [id, title]
          responses:
            201:
              description: Created
              content:
                application/json:
                  schema:
                    type: object
                    properties:
                      id: {type: integer}
                      title: {type: string}
                      author: {type: string, nullable: true}
                    required: [id, title]
            403:
              description: Not an editor
        """
        SEEN["create_book"] = threading.get_ident()
        if request.environ.get("REMOTE_USER") not in EDITORS:
            return jsonify(error="only editors may add books",
                           user=request.environ.get("REMOTE_USER")), 403
        data = request.get_json()
        with lock:
            book = {"id": max(books) + 1, "title": data["title"],
                    "author": data.get("author"), "tags": data.get("tags", [])}
            books[book["id"]] = book
        return jsonify(book), 201

    @app.get("/books/<int:book_id>")
    def get_book(book_id: int) -> Any:
        """Read one book.
        ---
        get:
          operationId: get_book
          tags: [books]
          parameters:
            - {name: book_id, in: path, required: true, schema: {type: integer}}
          responses:
            200:
              description: The book
              content:
                application/json:
                  schema:
                    type: object
                    properties:
                      id: {type: integer}
                      title: {type: string}
                    required: [id, title]
            404:
              description: No such book
        """
        with lock:
            book = books.get(book_id)
        if book is None:
            abort(404, description=f"no book {book_id}")
        return jsonify(book)

    @app.delete("/books/<int:book_id>")
    def delete_book(book_id: int) -> Any:
        """Remove a book.
        ---
        delete:
          operationId: delete_book
          tags: [books, editing]
          parameters:
            - {name: book_id, in: path, required: true, schema: {type: integer}}
          responses:
            204: {description: Removed}
        """
        with lock:
            books.pop(book_id, None)
        return Response(status=204)

    @app.get("/books/<int:book_id>/cover")
    def get_cover(book_id: int) -> Any:
        """The cover image.
        ---
        get:
          operationId: get_cover
          tags: [books]
          parameters:
            - {name: book_id, in: path, required: true, schema: {type: integer}}
          responses:
            200:
              description: A PNG
              content:
                image/png:
                  schema: {type: string, format: binary}
        """
        return Response(PNG, mimetype="image/png")

    @app.get("/health")
    def health() -> Any:
        """Whether the app is up (not documented for apispec)."""
        return "ok"

    @app.get("/stream")
    def stream() -> Any:
        """A streamed answer, larger than the tests' bound."""

        def chunks() -> Any:
            try:
                for _ in range(1000):
                    yield b"x" * 1024
            finally:
                SEEN["stream_closed"] = 1

        return Response(chunks(), mimetype="text/plain")

    return app
