"""Adding a method touches a table row, a handler and a client call, nothing else
(docs/architecture.md, "Adding a method"). The method here targets a URI, is cacheable and
may ask the client a question; the test registers its row through the public seam
(``mcpsync.protocol.methods.register``) and checks that caching, the multi round-trip
question, the ``Mcp-Name`` header and telemetry all follow from the row alone, over a
real HTTP server in 2026-07-28."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import requests

from mcpsync import Client, HandlerContext, HostHandlers, ProtocolOptions, Server
from mcpsync.protocol import methods
from mcpsync.protocol.methods import Method
from mcpsync.types import ElicitResult
from tests.helpers import WAIT
from tests.http.raw import modern_headers, modern_request
from tests.serving import RunningServer

METHOD = "acme/lookup"


@pytest.fixture
def lookup_row() -> Iterator[Method]:
    # 1. The row: every fact about the method, once.
    row = methods.register(Method(
        METHOD, methods.BOTH_ERAS, "client", target="resource", target_param="uri",
        cacheable=True, asks=True, streams=True))
    yield row
    methods.unregister(METHOD)


def test_a_method_added_by_its_row_is_cached_asks_is_routed_and_traced(lookup_row, sdk):
    server = Server("acme", telemetry=sdk.telemetry,
                    protocol=ProtocolOptions(cache_ttl_ms=60_000))
    runs: list[str] = []

    # 2. The handler.
    @server.method_handler(METHOD)
    def lookup(ctx: HandlerContext, params: dict) -> dict:
        uri = params["uri"]
        runs.append(uri)
        if not uri.startswith("acme://shelved/"):
            return {"uri": uri, "shelf": "A1"}
        answer = ctx.elicit("Which shelf?", {"type": "object",
                                             "properties": {"shelf": {"type": "string"}}})
        return {"uri": uri, "shelf": answer.content["shelf"]}

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        host = HostHandlers(elicitation=lambda p: ElicitResult("accept", {"shelf": "B2"}))
        with Client.http(url, protocol_version="2026-07-28", host=host, timeout=WAIT,
                         telemetry=sdk.telemetry) as client:
            # 3. The client call.
            first = client.request(METHOD, {"uri": "acme://books/1"})
            again = client.request(METHOD, {"uri": "acme://books/1"})
            asked = client.request(METHOD, {"uri": "acme://shelved/2"})
        assert first["shelf"] == "A1" and first["ttlMs"] == 60_000  # cache hints
        assert again == first  # from the client's cache: the handler ran once
        # The question went back as an InputRequiredResult and the retry got the answer
        # (a result made with answers carries no cache hints: it is the asker's own).
        assert asked["shelf"] == "B2" and "ttlMs" not in asked
        assert runs == ["acme://books/1", "acme://shelved/2", "acme://shelved/2"]

        # Mcp-Name is required and checked for it, as for resources/read.
        body = json.dumps(modern_request(METHOD, {"uri": "acme://books/1"}))
        missing = requests.post(url, data=body, headers=modern_headers(METHOD), timeout=WAIT)
        forged = requests.post(url, data=body, headers=modern_headers(METHOD, "acme://x"),
                               timeout=WAIT)
        for refused in (missing, forged):
            error = _error_of(refused)
            assert error["code"] == -32020 and "Mcp-Name" in error["message"], error

    server_spans = [s for s in sdk.finished() if s.kind.name == "SERVER"
                    and s.attributes.get("mcp.method.name") == METHOD]
    assert server_spans
    assert {s.attributes.get("mcp.resource.uri") for s in server_spans} == {
        "acme://books/1", "acme://shelved/2"}
    for side in ("server", "client"):
        names = {p.attributes["mcp.method.name"]
                 for p in sdk.points(f"mcp.{side}.operation.duration")}
        assert METHOD in names and "_OTHER" not in names, (side, names)


def test_without_its_row_a_custom_method_is_neither_cached_nor_named(sdk):
    server = Server("acme", telemetry=sdk.telemetry,
                    protocol=ProtocolOptions(cache_ttl_ms=60_000))
    runs: list[str] = []

    @server.method_handler(METHOD)
    def lookup(ctx: HandlerContext, params: dict) -> dict:
        runs.append(params["uri"])
        return {"uri": params["uri"]}

    with Client.memory(server, protocol_version="2026-07-28", timeout=WAIT,
                       telemetry=sdk.telemetry) as client:
        for _ in range(2):
            assert "ttlMs" not in client.request(METHOD, {"uri": "acme://books/1"})
    assert len(runs) == 2
    names = {p.attributes["mcp.method.name"]
             for p in sdk.points("mcp.server.operation.duration")}
    assert METHOD not in names and "_OTHER" in names


def _error_of(response: requests.Response) -> dict:
    text = response.text
    if text.lstrip().startswith("{"):
        return dict(json.loads(text)["error"])
    for line in text.splitlines():  # an SSE answer
        if line.startswith("data:") and '"error"' in line:
            return dict(json.loads(line[5:])["error"])
    raise AssertionError(f"no error in {response.status_code} {text!r}")
