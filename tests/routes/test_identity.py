"""Who calls reaches the app the way it expects: the MCP request's bearer token passed
through (over real HTTP to the MCP server), ``REMOTE_USER`` from the principal, or a
callable of the host's; a document the app serves itself is fetched in process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask, jsonify, request

from mcpsync import Client, HandlerContext, Server
from mcpsync.routes import AppDocument, OpenAPIError
from tests.serving import RunningServer

DOCUMENT = {
    "openapi": "3.1.0", "info": {"title": "whoami", "version": "1"},
    "paths": {"/whoami": {"get": {"operationId": "whoami", "responses": {"200": {
        "description": "who", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"auth": {"type": ["string", "null"]},
                                             "user": {"type": ["string", "null"]},
                                             "tenant": {"type": ["string", "null"]}}}}}}}}}},
}


def whoami_app() -> Flask:
    app = Flask("whoami")

    @app.get("/whoami")
    def whoami() -> Any:
        return jsonify(auth=request.headers.get("Authorization"),
                       user=request.environ.get("REMOTE_USER"),
                       tenant=request.environ.get("HTTP_X_TENANT"))

    @app.get("/openapi.json")
    def document() -> Any:
        return jsonify(DOCUMENT)

    return app


@pytest.fixture
def served() -> Iterator[RunningServer]:
    server = Server.from_wsgi(whoami_app(), openapi=AppDocument("/openapi.json"),
                              forward_identity="bearer")
    with RunningServer(server.wsgi_app()) as http:
        yield http


def test_the_bearer_token_of_the_mcp_request_reaches_the_app(served: RunningServer):
    with Client.http(f"{served.base}/mcp", headers={"Authorization": "Bearer tok-1"}) as client:
        names = [t.name for t in client.list_tools()]
        result = client.call_tool("whoami")
    assert names == ["whoami"]  # only what the served document lists: /openapi.json is not
    assert result.structured_content == {"auth": "Bearer tok-1", "user": None, "tenant": None}
    with Client.http(f"{served.base}/mcp") as client:
        assert client.call_tool("whoami").structured_content["auth"] is None


def test_a_callable_sets_what_the_app_expects():
    def tenant(ctx: HandlerContext | None, environ: dict[str, Any]) -> None:
        environ["HTTP_X_TENANT"] = str(ctx.meta.get("test/tenant")) if ctx else ""

    server = Server.from_wsgi(whoami_app(), openapi=DOCUMENT, forward_identity=tenant)
    with Client.memory(server) as client:
        result = client.call_tool("whoami", meta={"test/tenant": "acme"})
    assert result.structured_content == {"auth": None, "user": None, "tenant": "acme"}


def test_a_bad_identity_option_and_a_missing_served_document_are_clear_errors():
    with pytest.raises(ValueError, match="forward_identity"):
        Server.from_wsgi(whoami_app(), openapi=DOCUMENT,
                         forward_identity="cookie")  # type: ignore[arg-type]
    with pytest.raises(OpenAPIError, match=r"answered GET /nothing\.json with 404"):
        Server.from_wsgi(whoami_app(), openapi=AppDocument("/nothing.json"))
    with pytest.raises(OpenAPIError, match=r"AppDocument\('/openapi\.json'\)"):
        Server.from_wsgi(whoami_app(), openapi="/openapi.json")
