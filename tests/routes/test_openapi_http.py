"""A real published OpenAPI document (the USPTO Data Set API's, stored with its licence
in data/) made a server with ``Server.from_openapi``, its calls made over real HTTP with
``requests`` to a stand-in of that API on a socket: N operations, N tools as the route
maps say; structured answers valid against their output schemas; the caller's own
``Session`` used as it is and never changed; every call ended by its deadline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from flask import Flask, Response, jsonify, request

from mcpsync import Client, Server
from mcpsync.routes import OpenAPIError, RouteMap
from tests.serving import RunningServer

USPTO = Path(__file__).parent / "data" / "uspto.json"


class StandIn:
    """The USPTO endpoints, answering as the document says, on a real socket."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.seen: list[dict[str, Any]] = []
        app = Flask("uspto")

        @app.get("/")
        def list_data_sets() -> Any:
            self.seen.append({"auth": request.headers.get("Authorization")})
            return jsonify(total=1, apis=[{
                "apiKey": "oa_citations", "apiVersionNumber": "v1",
                "apiUrl": "http://x/oa_citations/v1/fields",
                "apiDocumentationUrl": "http://x/docs"}])

        @app.get("/<dataset>/<version>/fields")
        def fields(dataset: str, version: str) -> Any:
            if dataset == "slow":
                self.release.wait(10)  # until the test ends; the call gives up before
            if dataset == "trickle":  # the head at once, then the body held back

                def body() -> Iterator[bytes]:
                    yield b'"'
                    self.release.wait(10)
                    yield b'"'

                return Response(body(), mimetype="application/json")
            if dataset != "oa_citations":
                return jsonify("no such data set: " + dataset), 404
            return jsonify(f"{dataset} {version}: patent_number, filing_date")

        @app.post("/<dataset>/<version>/records")
        def records(dataset: str, version: str) -> Any:
            self.seen.append(dict(request.form))
            rows = int(request.form.get("rows", 100))
            return jsonify([{"n": {"i": i}} for i in range(rows)])

        @app.get("/openapi.json")
        def document() -> Any:
            return USPTO.read_bytes(), 200, {"Content-Type": "application/json"}

        @app.get("/relative.json")
        def relative() -> Any:
            return jsonify({**json.loads(USPTO.read_text()), "servers": [{"url": "/"}]})

        self.http = RunningServer(app)


@pytest.fixture
def api() -> Iterator[StandIn]:
    stand_in = StandIn()
    try:
        yield stand_in
    finally:
        stand_in.release.set()
        stand_in.http.stop()


def test_three_operations_are_three_tools_and_a_route_map_excludes_by_tag(api: StandIn):
    server = Server.from_openapi(USPTO, base_url=api.http.base)
    assert server.name == "USPTO Data Set API"
    with Client.memory(server) as client:
        assert [t.name for t in client.list_tools()] == [
            "list-data-sets", "list-searchable-fields", "perform-search"]
    metadata_only = Server.from_openapi(USPTO, base_url=api.http.base, route_maps=[
        RouteMap(tags=["search"], kind="exclude")])
    with Client.memory(metadata_only) as client:
        assert [t.name for t in client.list_tools()] == ["list-data-sets",
                                                          "list-searchable-fields"]


def test_answers_are_structured_and_valid_against_their_output_schemas(api: StandIn):
    server = Server.from_openapi(USPTO, base_url=api.http.base)
    with Client.memory(server) as client:
        tools = {t.name: t for t in client.list_tools()}
        sets = client.call_tool("list-data-sets")
        fields = client.call_tool("list-searchable-fields",
                                  {"dataset": "oa_citations", "version": "v1"})
        found = client.call_tool("perform-search", {"dataset": "oa_citations",
                                                    "version": "v1", "criteria": "*:*",
                                                    "rows": 2})
        missing = client.call_tool("list-searchable-fields", {"dataset": "nope",
                                                              "version": "v1"})
    for name, result in (("list-data-sets", sets), ("list-searchable-fields", fields),
                         ("perform-search", found)):
        assert not result.is_error, result
        jsonschema.validate(result.structured_content, tools[name].output_schema)
    assert sets.structured_content["total"] == 1
    assert fields.structured_content == {"result": "oa_citations v1: patent_number, filing_date"}
    assert found.structured_content == {"result": [{"n": {"i": 0}}, {"n": {"i": 1}}]}
    assert api.seen[-1] == {"criteria": "*:*", "rows": "2"}  # a form body, as documented
    assert missing.is_error
    assert missing.content[0].text == (
        'GET /{dataset}/{version}/fields answered 404 Not Found: "no such data set: nope"')


def test_the_callers_session_is_used_and_never_changed(api: StandIn):
    session = requests.Session()
    session.headers["Authorization"] = "Bearer k-123"
    adapters = dict(session.adapters)
    headers = dict(session.headers)
    server = Server.from_openapi(f"{api.http.base}/openapi.json", session=session,
                                 base_url=api.http.base)
    with Client.memory(server) as client:
        assert not client.call_tool("list-data-sets").is_error
    assert api.seen[-1] == {"auth": "Bearer k-123"}
    assert session.adapters == adapters and dict(session.headers) == headers
    session.close()


@pytest.mark.parametrize("own_session", [True, False], ids=["own-session", "callers-session"])
def test_a_call_ends_by_its_deadline(api: StandIn, own_session: bool):
    session = None if own_session else requests.Session()
    server = Server.from_openapi(USPTO, base_url=api.http.base, timeout=0.5, session=session)
    began = time.monotonic()
    with Client.memory(server) as client:
        result = client.call_tool("list-searchable-fields", {"dataset": "slow",
                                                             "version": "v1"})
    assert time.monotonic() - began < 5
    assert result.is_error
    assert result.content[0].text == ("GET /{dataset}/{version}/fields (list-searchable-fields):"
                                      " its time budget of 0.5 s ran out")


def test_no_base_url_and_a_bad_document_url_are_clear_errors(api: StandIn):
    with pytest.raises(OpenAPIError, match="base_url"):
        Server.from_openapi({"openapi": "3.1.0", "info": {"title": "x", "version": "1"},
                             "paths": {}})
    with pytest.raises(OpenAPIError, match="HTTP 404"):
        Server.from_openapi(f"{api.http.base}/nothing.json")
    with pytest.raises(OpenAPIError, match=r"connection refused|cannot connect"):
        Server.from_openapi("http://127.0.0.1:9/openapi.json")


def test_a_relative_server_url_is_relative_to_the_documents_url(api: StandIn):
    server = Server.from_openapi(f"{api.http.base}/relative.json")
    with Client.memory(server) as client:
        result = client.call_tool("list-data-sets")
    assert not result.is_error and result.structured_content["total"] == 1


@pytest.mark.parametrize(("own_session", "dataset"), [
    (True, "slow"), (True, "trickle"), (False, "trickle")],
    ids=["own-session-no-head", "own-session-trickle", "callers-session-trickle"])
def test_cancelling_the_mcp_request_ends_the_http_exchange(api: StandIn, own_session: bool,
                                                           dataset: str):
    """On mcpsync's own session at any point; on the caller's (which gets no adapter) once
    the answer's head has come (before that, its reads wait at most the deadline)."""
    from mcpsync import RequestTimeoutError
    from mcpsync.routes import transform_tool

    ended = threading.Event()

    def noted(ctx: Any, arguments: dict[str, Any], call_next: Any) -> Any:
        try:
            return call_next(arguments)
        finally:
            ended.set()

    session = None if own_session else requests.Session()
    server = Server.from_openapi(USPTO, base_url=api.http.base, timeout=30, session=session)
    transform_tool(server, "list-searchable-fields", wrap=noted)
    began = time.monotonic()
    with Client.memory(server) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("list-searchable-fields", {"dataset": dataset, "version": "v1"},
                             timeout=0.5)
        assert ended.wait(5), "the call went on after its request was cancelled"
    assert time.monotonic() - began < 5  # the stand-in holds the answer for 10 s
