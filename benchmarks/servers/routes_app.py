"""The app of ``benchmarks/routes.py``: one JSON route, its OpenAPI document beside it.

Plain WSGI (no framework), so the three ways of reaching it differ only in the way: mcpsync
in process, mcpsync over HTTP to gunicorn, fastmcp over HTTP to gunicorn. Served with
``gunicorn benchmarks.servers.routes_app:app``; the document is ``DOCUMENT`` (also at
``GET /openapi.json``)."""

from __future__ import annotations

import json
from typing import Any

DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "items", "version": "1"},
    "paths": {"/items/{item_id}": {"get": {
        "operationId": "get_item", "summary": "Read one item",
        "parameters": [{"name": "item_id", "in": "path", "required": True,
                        "schema": {"type": "integer"}},
                       {"name": "verbose", "in": "query", "schema": {"type": "boolean"}}],
        "responses": {"200": {"description": "The item", "content": {"application/json": {
            "schema": {"type": "object", "properties": {
                "id": {"type": "integer"}, "name": {"type": "string"},
                "verbose": {"type": "boolean"}},
                "required": ["id", "name"]}}}}}}}},
}
_DOCUMENT_BYTES = json.dumps(DOCUMENT).encode()


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    path = environ.get("PATH_INFO", "")
    if path == "/openapi.json":
        body = _DOCUMENT_BYTES
    elif path.startswith("/items/") and path[7:].isdigit():
        verbose = "verbose=true" in environ.get("QUERY_STRING", "")
        body = json.dumps({"id": int(path[7:]), "name": f"item {path[7:]}",
                           "verbose": verbose}).encode()
    else:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
