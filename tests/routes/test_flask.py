"""A real Flask app (documented with apispec) served as MCP tools, each call made into the
app in process: the route maps decide what is listed, calls reach the views, the app's own
permission check refuses a caller who is not an editor, answers validate against their
output schemas, binary answers are blobs, streamed answers are bounded and closed."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from mcpsync import AccessToken, Client, HandlerContext, Server
from mcpsync.routes import RouteLimits, RouteMap
from tests.routes import flask_books

DOCUMENTED = {"list_books", "create_book", "get_book", "delete_book", "get_cover"}


def identified(server: Server) -> Server:
    """The caller's principal from the request's ``_meta`` (an auth layer of the host's)."""

    @server.request_scope
    def authenticate(ctx: HandlerContext) -> Iterator[None]:
        user = ctx.meta.get("test/user")
        ctx.transport.auth = None if user is None else AccessToken(user, "host", frozenset())
        yield

    return server


@pytest.fixture
def books() -> Server:
    app = flask_books.make_app()
    return identified(Server.from_wsgi(app, forward_identity="remote_user", route_maps=[
        RouteMap(pattern=r"^/(health|stream)$", kind="exclude")]))


def test_every_documented_route_is_a_tool_and_excluded_ones_are_absent(books: Server):
    with Client.memory(books) as client:
        tools = {t.name: t for t in client.list_tools()}
    assert set(tools) == DOCUMENTED
    assert tools["list_books"].description == "List the books, optionally by author or tag."
    assert tools["list_books"].input_schema["properties"]["tag"] == {
        "type": "array", "items": {"type": "string"}}
    assert tools["get_book"].input_schema["required"] == ["book_id"]
    # readOnly id is not something a caller sends
    assert set(tools["create_book"].input_schema["properties"]) == {"title", "author", "tags"}
    assert tools["create_book"].input_schema["required"] == ["title"]
    assert tools["list_books"].annotations.read_only_hint is True
    assert tools["delete_book"].annotations.destructive_hint is True


def test_a_call_reaches_the_view_in_process_and_validates_against_its_output_schema(
        books: Server):
    flask_books.SEEN.clear()
    with Client.memory(books) as client:
        tool = {t.name: t for t in client.list_tools()}["list_books"]
        result = client.call_tool("list_books", {"author": "Herbert", "tag": ["sf"]})
    assert not result.is_error, result
    assert result.structured_content == {"result": [
        {"id": 1, "title": "Dune", "author": "Herbert", "tags": ["sf"]}]}
    jsonschema.validate(result.structured_content, tool.output_schema)
    assert "list_books" in flask_books.SEEN  # the view ran: no socket, no second server


def test_the_apps_permission_check_decides_who_may_create(books: Server):
    with Client.memory(books) as client:
        refused = client.call_tool("create_book", {"title": "Ulysses"},
                                   meta={"test/user": "bob"})
        anonymous = client.call_tool("create_book", {"title": "Ulysses"})
        made = client.call_tool("create_book", {"title": "Ulysses", "author": "Joyce"},
                                meta={"test/user": "alice"})
        tool = {t.name: t for t in client.list_tools()}["create_book"]
    assert refused.is_error
    assert refused.content[0].text.startswith("POST /books answered 403 Forbidden: ")
    assert '"user":"bob"' in refused.content[0].text.replace(" ", "")
    assert anonymous.is_error and '"user":null' in anonymous.content[0].text.replace(" ", "")
    assert not made.is_error, made
    assert made.structured_content == {"id": 3, "title": "Ulysses", "author": "Joyce",
                                       "tags": []}
    jsonschema.validate(made.structured_content, tool.output_schema)


def test_a_404_is_an_error_result_and_a_binary_answer_a_blob(books: Server):
    with Client.memory(books) as client:
        missing = client.call_tool("get_book", {"book_id": 99})
        cover = client.call_tool("get_cover", {"book_id": 1})
        gone = client.call_tool("delete_book", {"book_id": 2})
        bad = client.call_tool("get_book", {"book_id": "two"})
    assert missing.is_error
    assert missing.content[0].text.startswith("GET /books/{book_id} answered 404 Not Found")
    assert "no book 99" in missing.content[0].text
    assert not cover.is_error
    block = cover.content[0]
    assert block.type == "resource" and block.resource.mime_type == "image/png"
    assert base64.b64decode(block.resource.blob) == flask_books.PNG
    assert not gone.is_error and gone.content[0].text == ""
    assert bad.is_error and "book_id" in bad.content[0].text  # refused before the app


def test_an_error_body_is_quoted_only_up_to_the_bound():
    app = flask_books.make_app()
    limits = RouteLimits(error_excerpt_bytes=16)
    server = Server.from_wsgi(app, limits=limits)
    with Client.memory(server) as client:
        refused = client.call_tool("create_book", {"title": "x"})
    text = refused.content[0].text
    assert refused.is_error
    assert text.endswith(" …") and len(text.split(": ", 1)[1]) <= 16 + 2


def test_a_streamed_answer_is_read_to_a_byte_bound_and_closed():
    app = flask_books.make_app()
    flask_books.SEEN.clear()
    server = Server.from_wsgi(app, limits=RouteLimits(max_response_bytes=64 * 1024))
    with Client.memory(server) as client:
        result = client.call_tool("stream")
        health = client.call_tool("health")
    assert result.is_error and "65536-byte bound" in result.content[0].text
    assert flask_books.SEEN.get("stream_closed") == 1  # close() ran: the generator ended
    assert health.content[0].text == "ok"  # undocumented route: from the URL map


def test_an_apispec_object_with_components_and_references_is_a_document():
    from apispec import APISpec
    from apispec_webframeworks.flask import FlaskPlugin
    from flask import Flask, jsonify

    app = Flask("refs")

    @app.get("/node/<int:node_id>")
    def node(node_id: int) -> Any:
        """---
        get:
          operationId: get_node
          parameters:
            - {name: node_id, in: path, required: true, schema: {type: integer}}
          responses:
            200:
              content:
                application/json:
                  schema: {$ref: "#/components/schemas/Node"}
        """
        return jsonify(id=node_id, children=[{"id": node_id + 1, "children": []}])

    spec = APISpec(title="refs", version="1", openapi_version="3.0.3", plugins=[FlaskPlugin()])
    spec.components.schema("Node", {"type": "object", "properties": {
        "id": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}},
        "required": ["id"]})
    with app.test_request_context():
        spec.path(view=node, app=app)
    server = Server.from_wsgi(app, openapi=spec)
    with Client.memory(server) as client:
        tool = client.list_tools()[0]
        result = client.call_tool("get_node", {"node_id": 1})
    assert tool.output_schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "Node" in tool.output_schema["$defs"]
    assert result.structured_content == {"id": 1, "children": [{"id": 2, "children": []}]}
    jsonschema.validate(result.structured_content, tool.output_schema)


def test_calls_run_side_by_side():
    """Many concurrent calls into one app: each gets its own answer."""
    server = Server.from_wsgi(flask_books.make_app())
    errors: list[BaseException] = []
    with Client.memory(server) as client:
        def one(book_id: int) -> None:
            try:
                result = client.call_tool("get_book", {"book_id": book_id})
                assert result.structured_content["id"] == book_id
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(1 + i % 2,), name=f"caller-{i}")
                   for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert not errors


def test_routes_without_documentation_are_listed_with_typed_path_converters():
    from flask import Flask, jsonify

    from mcpsync.routes import Document, operations_of
    from mcpsync.routes.frameworks import flask_document

    app = Flask("plain")

    @app.route("/shelves/<int:shelf>/items/<uuid:item>", methods=["GET", "PUT"])
    def item(shelf: int, item: Any) -> Any:
        """An item on a shelf."""
        return jsonify(shelf=shelf, item=str(item))

    @app.get("/files/<path:name>")
    def files(name: str) -> Any:
        return jsonify(name=name)

    ops = {(o.method, o.path): o for o in operations_of(Document(flask_document(app)))}
    get = ops[("GET", "/shelves/{shelf}/items/{item}")]
    assert get.operation_id == "item_get" and get.description == "An item on a shelf."
    assert get.input_schema["properties"] == {"shelf": {"type": "integer"},
                                              "item": {"type": "string", "format": "uuid"}}
    put = ops[("PUT", "/shelves/{shelf}/items/{item}")]
    assert put.input_schema["properties"]["body"] == {"type": "object"}  # any JSON object
    server = Server.from_wsgi(app)
    with Client.memory(server) as client:
        got = client.call_tool("item_get", {"shelf": 3,
                                            "item": "12345678-1234-5678-1234-567812345678"})
        path = client.call_tool("files", {"name": "a b.txt"})
    assert got.structured_content == {"shelf": 3, "item": "12345678-1234-5678-1234-567812345678"}
    assert path.structured_content == {"name": "a b.txt"}
