"""Reading OpenAPI documents: names, route maps, flattened arguments and their collisions,
references, OpenAPI 3.0 schemas made JSON Schema, and hostile documents (reference
circles, ten thousand operations, huge and deep schemas) failing clearly and fast."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, Server
from mcpsync.routes import (
    Document,
    OpenAPIError,
    RouteLimits,
    RouteMap,
    load_document,
    operations_of,
)
from mcpsync.routes.calls import build_request
from mcpsync.routes.maps import MAX_NAME, kind_of, tool_names

DATA = Path(__file__).parent / "data"


def doc(paths: dict[str, Any], *, version: str = "3.0.3", **extra: Any) -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths,
            **extra}


def ok(schema: Any = None) -> dict[str, Any]:
    if schema is None:
        return {"200": {"description": "ok"}}
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def test_the_published_uspto_document_makes_its_three_operations():
    document = load_document(DATA / "uspto.json")
    ops = operations_of(document)
    assert [(o.method, o.path) for o in ops] == [
        ("GET", "/"), ("GET", "/{dataset}/{version}/fields"),
        ("POST", "/{dataset}/{version}/records")]
    assert tool_names(ops) == ["list-data-sets", "list-searchable-fields", "perform-search"]
    search = ops[2]
    assert search.body_type == "application/x-www-form-urlencoded"
    assert search.input_schema["required"] == ["version", "dataset"]  # criteria: body optional
    assert set(search.input_schema["properties"]) == {"version", "dataset", "criteria",
                                                       "start", "rows"}
    assert ops[0].output_schema["properties"]["apis"]["type"] == "array"
    assert ops[1].wrap_result and ops[1].output_schema["required"] == ["result"]
    assert document.server_url() == "https://developer.uspto.gov/ds-api"
    request = build_request(search, {"dataset": "oa_citations", "version": "v1",
                                     "criteria": "*:*", "rows": 2})
    assert request.path == "/oa_citations/v1/records"
    assert request.body == b"criteria=%2A%3A%2A&rows=2"


def test_names_are_sanitized_unique_and_within_the_limit():
    long_id = "x" * 300
    document = Document(doc({
        "/a/{id}": {"get": {"operationId": "get item!", "responses": ok()},
                    "put": {"operationId": "get item?", "responses": ok()},
                    "delete": {"responses": ok()}},
        "/b": {"get": {"operationId": long_id, "responses": ok()},
               "post": {"operationId": long_id, "responses": ok()}},
    }))
    names = tool_names(operations_of(document))
    assert names[:3] == ["get_item", "get_item_2", "delete_a_id"]
    assert len(names[3]) == MAX_NAME and len(names[4]) == MAX_NAME
    assert names[3] != names[4] and names[4].endswith("_2")
    assert all(set(n) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
               for n in names)


def test_route_maps_first_match_wins_and_the_default_is_a_tool():
    document = Document(doc({
        "/admin/users": {"get": {"tags": ["admin"], "responses": ok()}},
        "/reports": {"get": {"tags": ["reports"], "responses": ok()}},
        "/reports/{id}": {"get": {"tags": ["reports"], "responses": ok()},
                          "delete": {"tags": ["reports"], "responses": ok()}},
    }))
    rules = [RouteMap(tags=["admin"], kind="exclude"),
             RouteMap(methods=["get"], pattern=r"^/reports/\{", kind="template"),
             RouteMap(methods="GET", pattern=r"^/reports$", kind="resource"),
             RouteMap(methods=["GET"], kind="exclude")]
    kinds = [kind_of(op, rules) for op in operations_of(document)]
    assert kinds == ["exclude", "resource", "template", "tool"]
    assert [kind_of(op, []) for op in operations_of(document)] == ["tool"] * 4
    with pytest.raises(ValueError, match="kind"):
        RouteMap(kind="prompt")  # type: ignore[arg-type]


def test_parameters_of_every_place_flatten_and_collisions_are_suffixed_by_place():
    document = Document(doc({
        "/items/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "integer"}}],
            "put": {
                "operationId": "update",
                "parameters": [
                    {"$ref": "#/components/parameters/Verbose"},
                    {"name": "id", "in": "query", "schema": {"type": "string"}},
                    {"name": "tag", "in": "query", "explode": False,
                     "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "filter", "in": "query", "style": "deepObject",
                     "schema": {"type": "object"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                ],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"allOf": [{"$ref": "#/components/schemas/Base"},
                                         {"type": "object", "properties": {
                                             "name": {"type": "string"}},
                                          "required": ["name"]}]}}}},
                "responses": ok(),
            }},
    }, components={
        "parameters": {"Verbose": {"name": "verbose", "in": "query",
                                   "schema": {"type": "boolean"}}},
        "schemas": {"Base": {"type": "object", "properties": {
            "id": {"type": "integer"}, "note": {"type": "string", "nullable": True}}}},
    }))
    op = operations_of(document)[0]
    schema = op.input_schema
    assert list(schema["properties"]) == ["id_path", "verbose", "id_query", "tag", "filter",
                                          "X-Trace", "session", "id_body", "note", "name"]
    assert schema["required"] == ["id_path", "name"]
    assert schema["properties"]["note"] == {"type": ["string", "null"]}  # 3.0 nullable
    request = build_request(op, {"id_path": 7, "id_query": "q", "id_body": 8, "name": "n",
                                 "verbose": True, "tag": ["a", "b"], "filter": {"x": 1},
                                 "X-Trace": "t1", "session": "s"})
    assert request.path == "/items/7"
    assert request.query == [("verbose", "true"), ("id", "q"), ("tag", "a,b"),
                             ("filter[x]", "1")]
    assert request.headers == {"X-Trace": "t1"} and request.cookies == {"session": "s"}
    assert json.loads(request.body or b"") == {"id": 8, "name": "n"}


def test_a_body_that_is_not_an_object_is_one_argument_and_oneof_keeps_its_schema():
    document = Document(doc({"/bulk": {"post": {
        "operationId": "bulk",
        "requestBody": {"content": {"application/json": {"schema": {
            "oneOf": [{"type": "array", "items": {"type": "integer"}},
                      {"type": "integer"}]}}}},
        "responses": ok({"type": "integer"})}}}, version="3.1.0"))
    op = operations_of(document)[0]
    assert op.input_schema == {"type": "object", "properties": {"body": {
        "oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "integer"}]}}}
    assert json.loads(build_request(op, {"body": [1, 2]}).body or b"") == [1, 2]
    assert op.output_schema == {"type": "object", "properties": {"result": {"type": "integer"}},
                                "required": ["result"]}


def test_a_recursive_schema_stays_recursive_under_defs():
    document = Document(doc({"/tree": {"get": {"responses": ok(
        {"$ref": "#/components/schemas/Tree"})}}}, components={"schemas": {"Tree": {
            "type": "object", "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}}}}))
    op = operations_of(document)[0]
    assert op.output_schema["properties"]["kids"]["items"] == {"$ref": "#/$defs/Tree"}
    assert op.output_schema["$defs"]["Tree"]["properties"]["kids"]["items"] == {
        "$ref": "#/$defs/Tree"}


@pytest.mark.parametrize(("components", "match"), [
    ({"schemas": {"A": {"$ref": "#/components/schemas/A"}}}, "circle"),
    ({"schemas": {"A": {"allOf": [{"$ref": "#/components/schemas/B"}]},
                  "B": {"anyOf": [{"$ref": "#/components/schemas/A"}]}}}, "circle"),
], ids=["self", "through-allOf"])
def test_a_reference_circle_that_never_reaches_a_value_is_refused(components: Any,
                                                                   match: str):
    document = Document(doc({"/x": {"get": {"responses": ok(
        {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}})}}},
        components=components))
    with pytest.raises(OpenAPIError, match=match):
        operations_of(document)


def test_a_parameter_reference_circle_and_a_dangling_reference_are_refused():
    circular = Document(doc({"/x": {"get": {"parameters": [
        {"$ref": "#/components/parameters/P"}], "responses": ok()}}},
        components={"parameters": {"P": {"$ref": "#/components/parameters/Q"},
                                   "Q": {"$ref": "#/components/parameters/P"}}}))
    with pytest.raises(OpenAPIError, match="circle"):
        operations_of(circular)
    dangling = Document(doc({"/x": {"get": {"responses": ok(
        {"$ref": "#/components/schemas/Nope"})}}}))
    with pytest.raises(OpenAPIError, match="points at nothing"):
        operations_of(dangling)
    remote = Document(doc({"/x": {"get": {"responses": ok(
        {"$ref": "https://example.com/s.json#/X"})}}}))
    with pytest.raises(OpenAPIError, match="not local"):
        operations_of(remote)


def test_ten_thousand_operations_fail_at_once_naming_the_bound():
    paths = {f"/op{i}": {"get": {"responses": ok()}} for i in range(10_000)}
    began = time.monotonic()
    with pytest.raises(OpenAPIError, match="more than 2000 operations"):
        Server.from_openapi(doc(paths), base_url="http://127.0.0.1:9")
    assert time.monotonic() - began < 5
    bigger = Server.from_openapi(doc(paths), base_url="http://127.0.0.1:9",
                                 limits=RouteLimits(max_operations=10_000),
                                 route_maps=[RouteMap(pattern=r"^/op[0-9]$"),
                                             RouteMap(kind="exclude")])
    assert len(bigger.tools) == 10


def test_huge_and_deep_schemas_fail_naming_the_bound():
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30_000)}}
    with pytest.raises(OpenAPIError, match="max_schema_nodes"):
        operations_of(Document(doc({"/x": {"get": {"responses": ok(wide)}}})))
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(500):
        deep = {"type": "array", "items": deep}
    with pytest.raises(OpenAPIError, match="max_depth"):
        operations_of(Document(doc({"/x": {"get": {"responses": ok(deep)}}})))


def test_documents_that_are_not_openapi_3_and_bad_files_are_clear_errors(tmp_path: Path):
    with pytest.raises(OpenAPIError, match=r"Swagger 2\.0"):
        Document({"swagger": "2.0", "paths": {}})
    with pytest.raises(OpenAPIError, match="not an OpenAPI 3"):
        Document({"openapi": "4.0"})
    with pytest.raises(OpenAPIError, match="cannot read"):
        load_document(tmp_path / "missing.json")
    nested = tmp_path / "deep.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(OpenAPIError, match="not valid JSON"):
        load_document(nested)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(OpenAPIError, match="max_document_bytes"):
        load_document(big, limits=RouteLimits(max_document_bytes=1024))
    yaml_file = tmp_path / "api.yaml"
    yaml_file.write_text("openapi: 3.1.0\ninfo: {title: y, version: '1'}\npaths:\n"
                         "  /ping:\n    get:\n      operationId: ping\n      responses:\n"
                         "        200: {description: pong}\n")
    assert tool_names(operations_of(load_document(yaml_file))) == ["ping"]


def test_read_only_fields_leave_inputs_and_write_only_fields_leave_outputs():
    document = Document(doc({"/u": {"post": {
        "requestBody": {"content": {"application/json": {"schema": {
            "$ref": "#/components/schemas/User"}}}},
        "responses": {"201": {"description": "made", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/User"}}}}}}}},
        components={"schemas": {"User": {"type": "object", "required": ["id", "password"],
                                         "properties": {
                                             "id": {"type": "integer", "readOnly": True},
                                             "password": {"type": "string", "writeOnly": True},
                                             "name": {"type": "string"}}}}}))
    op = operations_of(document)[0]
    assert set(op.input_schema["properties"]) == {"password", "name"}
    assert set(op.output_schema["properties"]) == {"id", "name"}
    assert op.output_schema["required"] == ["id"]


def test_resources_and_templates_read_through_the_route():
    from flask import Flask, jsonify

    app = Flask("reports")

    @app.get("/reports")
    def reports() -> Any:
        return jsonify([{"id": 1}])

    @app.get("/reports/<int:report_id>")
    def report(report_id: int) -> Any:
        if report_id != 1:
            return jsonify(error="none"), 404
        return jsonify(id=1, verbose=request_arg("verbose"))

    def request_arg(name: str) -> Any:
        from flask import request

        return request.args.get(name)

    document = doc({
        "/reports": {"get": {"operationId": "reports", "responses": ok({"type": "array"})}},
        "/reports/{report_id}": {"get": {"operationId": "report", "parameters": [
            {"name": "report_id", "in": "path", "required": True,
             "schema": {"type": "integer"}},
            {"name": "verbose", "in": "query", "schema": {"type": "string"}}],
            "responses": ok({"type": "object"})}}})
    server = Server.from_wsgi(app, openapi=document, route_maps=[
        RouteMap(pattern=r"^/reports$", kind="resource"),
        RouteMap(pattern=r"\{report_id\}", kind="template")])
    with Client.memory(server) as client:
        assert client.list_tools() == []
        [resource] = client.list_resources()
        [template] = client.list_resource_templates()
        assert resource.uri == "api://reports"
        assert template.uri_template == "api://report/{report_id}{?verbose}"
        assert json.loads(client.read_resource("api://reports").contents[0].text) == [{"id": 1}]
        read = client.read_resource("api://report/1?verbose=yes").contents[0]
        assert json.loads(read.text) == {"id": 1, "verbose": "yes"}
        assert read.mime_type == "application/json"
        from mcpsync import ResourceNotFoundError

        with pytest.raises(ResourceNotFoundError):
            client.read_resource("api://report/2")
    with pytest.raises(OpenAPIError, match="can be a 'template', not a 'resource'"):
        Server.from_wsgi(app, openapi=document, route_maps=[RouteMap(kind="resource")])


def test_a_path_argument_cannot_climb_out_of_its_route():
    document = Document(doc({"/files/{name}": {"get": {"operationId": "read", "parameters": [
        {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": ok()}}}))
    op = operations_of(document)[0]
    assert build_request(op, {"name": ".."}).path == "/files/%2E%2E"
    assert build_request(op, {"name": "../admin"}).path == "/files/..%2Fadmin"
    assert build_request(op, {"name": "a b"}).path == "/files/a%20b"
