"""The method table (``protocol/methods.py``): one row per method, and every view the
code reads derived from it. A handler without a row, or a row without a handler, fails
here; so does a view that drifts from what the rows say."""

from __future__ import annotations

import pytest

from mcpsync import Client, HostHandlers, Server
from mcpsync.client import cache
from mcpsync.dispatch import ports, questions
from mcpsync.errors import MCPError
from mcpsync.protocol import http_headers, lifecycle, methods
from mcpsync.protocol.methods import BUILTIN, TABLE, VIEWS, Method
from mcpsync.proxy import forward
from mcpsync.server import stateless
from mcpsync.types import CreateMessageResult, ElicitResult, Root, TextContent

#: The requests a server answers outside its method registry, by the session itself:
#: ``initialize`` opens a handshake-era session (``server/session.py``).
OUTSIDE_THE_REGISTRY = {"initialize"}


def _server_requests() -> set[str]:
    return {row.name for row in BUILTIN
            if not row.notification and row.sender in ("client", "both")}


def test_every_builtin_server_handler_has_a_row_and_every_row_a_handler():
    server = Server("table")  # with the tasks extension, as every mcpsync.Server
    handled = set(server.methods.request_methods()) | OUTSIDE_THE_REGISTRY
    assert handled == _server_requests()
    assert all(server.methods.is_default(m) for m in server.methods.request_methods())


def test_every_builtin_client_handler_has_a_row_and_every_row_a_handler():
    host = HostHandlers(elicitation=lambda p: ElicitResult("decline"),
                        sampling=lambda p: CreateMessageResult(
                            "assistant", TextContent("hi"), "m"),
                        roots=[Root("file:///w")])
    with Client.memory(Server("table"), host=host) as client:
        handled = set(client.methods.request_methods())
    rows = {row.name for row in BUILTIN
            if not row.notification and row.sender in ("server", "both")}
    assert handled == rows


def test_rows_are_frozen_and_checked():
    row = TABLE.get("tools/call")
    assert row is not None
    with pytest.raises(AttributeError):
        row.cacheable = True  # type: ignore[misc]
    with pytest.raises(ValueError, match="target needs its param"):
        Method("x/y", methods.MODERN_ONLY, "client", target="resource")
    with pytest.raises(ValueError, match="has a row already"):
        methods.register(Method("tools/call", methods.BOTH_ERAS, "client"))
    with pytest.raises(ValueError, match="built in"):
        methods.unregister("tools/call")
    assert TABLE.get("initialize").removed_in == "modern"  # type: ignore[union-attr]
    assert TABLE.get("tools/call").removed_in is None  # type: ignore[union-attr]


def test_rows_compare_hash_and_copy_by_their_fields():
    import copy
    import pickle

    row = Method("x/y", methods.MODERN_ONLY, "client", target="resource", target_param="uri")
    same = Method("x/y", methods.MODERN_ONLY, "client", target="resource", target_param="uri")
    assert row == same and hash(row) == hash(same) and len({row, same}) == 1
    assert row != Method("x/y", methods.MODERN_ONLY, "client")
    assert row.telemetry == "mcp.resource.uri"  # the default its target gives
    assert pickle.loads(pickle.dumps(row)) == row == copy.deepcopy(row)
    with pytest.raises(AttributeError):
        del row.name
    with pytest.raises(AttributeError):
        row.extra = 1  # type: ignore[attr-defined]
    assert repr(row).startswith("Method(name='x/y', eras=frozenset({'modern'}), ")


def test_the_modules_read_the_views_themselves():
    # Not copies: a row registered later is seen by each of them.
    assert cache.CACHEABLE is VIEWS.cacheable
    assert stateless.CACHEABLE_METHODS is VIEWS.cacheable
    assert stateless.REMOVED_METHODS is VIEWS.removed_modern
    assert ports.MRTR_METHODS is VIEWS.asks
    assert http_headers.NAME_SOURCES is VIEWS.name_sources
    assert forward.FORWARDED is VIEWS.forwarded
    assert questions.INPUT_REQUEST_METHODS is VIEWS.questions
    assert lifecycle.PRE_INIT_METHODS is VIEWS.before_init


def test_the_views_say_what_the_sets_they_replaced_said():
    # The behaviour of each site is unchanged: these are the sets as they were written.
    assert VIEWS.cacheable == {"server/discover", "tools/list", "prompts/list",
                               "resources/list", "resources/templates/list",
                               "resources/read"}
    assert VIEWS.asks == {"tools/call", "prompts/get", "resources/read"}
    assert VIEWS.threaded_modern == {"tools/call", "prompts/get", "resources/read",
                                     "subscriptions/listen", "completion/complete"}
    assert VIEWS.never_inline == {"subscriptions/listen", "tasks/result"}
    assert VIEWS.name_sources == {"tools/call": "name", "prompts/get": "name",
                                  "resources/read": "uri", "tasks/get": "taskId",
                                  "tasks/update": "taskId", "tasks/cancel": "taskId"}
    assert VIEWS.removed_modern == {"initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe",
                                    "tasks/result", "tasks/list"}
    assert set(VIEWS.forwarded) == {"tools/list", "tools/call", "resources/list",
                                    "resources/templates/list", "resources/read",
                                    "prompts/list", "prompts/get", "completion/complete"}
    assert VIEWS.mount_lists == {"tools/list": ("tools", "name"),
                                 "prompts/list": ("prompts", "name"),
                                 "resources/list": ("resources", "uri"),
                                 "resources/templates/list": ("resourceTemplates",
                                                              "uriTemplate")}
    assert set(VIEWS.mount_routed) == {"tools/call", "prompts/get", "resources/read",
                                       "completion/complete"}
    assert VIEWS.scoped == {"tools/call": "tool", "prompts/get": "prompt",
                            "resources/read": "resource", "resources/subscribe": "resource"}
    assert VIEWS.questions == ["elicitation/create", "sampling/createMessage", "roots/list"]
    assert VIEWS.question_needs == {"elicitation/create": "elicitation",
                                    "sampling/createMessage": "sampling", "roots/list": "roots"}
    assert VIEWS.before_init == {"initialize", "ping"}
    assert VIEWS.not_cancellable == {"initialize"}
    assert VIEWS.invalidates == {
        "notifications/tools/list_changed": ("tools/list",),
        "notifications/prompts/list_changed": ("prompts/list",),
        "notifications/resources/list_changed": ("resources/list",
                                                 "resources/templates/list")}
    assert VIEWS.by_capability["resources"] == (
        "resources/list", "resources/templates/list", "resources/read",
        "resources/subscribe", "resources/unsubscribe")


def test_the_eras_are_the_spec_schemas(spec_methods):
    # Each revision's schema names the methods of its era (the tasks rows of 2026-07-28
    # are its extension's, which has its own schema).
    for version, era in (("2025-11-25", "legacy"), ("2026-07-28", "modern")):
        named = spec_methods(version)
        rows = {row.name for row in BUILTIN if era in row.eras}
        if era == "modern":
            named |= spec_methods("ext-tasks")
        assert rows == named, (version, rows ^ named)


@pytest.fixture
def spec_methods():
    import json

    from tests import spec

    if not spec.available():  # a bare clone: the schemas live outside the repository
        pytest.skip(spec.unavailable_notice())

    def named(version: str) -> set[str]:
        schema = json.loads((spec.SPEC_DIR / version / "schema.json").read_text())
        found = set()
        for definition in (schema.get("definitions") or schema.get("$defs") or {}).values():
            # A message is an object whose "method" is a const, directly or in an allOf.
            for part in [definition, *definition.get("allOf", [])]:
                method = (part.get("properties") or {}).get("method")
                if isinstance(method, dict) and isinstance(method.get("const"), str):
                    found.add(method["const"])
        return found

    return named


def test_server_discover_is_an_ordinary_registered_builtin():
    server = Server("table", instructions="ask away")
    assert server.methods.is_default("server/discover")
    seen: list[str] = []

    @server.request_scope
    def scope(ctx):
        seen.append(ctx.method)
        yield

    with Client.memory(server, protocol_version="2026-07-28") as client:
        answer = client.request("server/discover", {}, cache=False)
    assert answer["supportedVersions"] == ["2026-07-28"]
    assert answer["instructions"] == "ask away" and "tools" in answer["capabilities"]
    assert "server/discover" in seen  # it runs as every handler runs
    with Client.memory(server, protocol_version="2025-11-25") as client, pytest.raises(
            MCPError) as missing:  # no such method in the handshake era
        client.request("server/discover", {})
    assert missing.value.code == -32601

    @server.method_handler("server/discover", replace=True)
    def own(ctx, params):
        return {"supportedVersions": ["2026-07-28"], "capabilities": {}}

    with Client.memory(server, protocol_version="2026-07-28") as client:
        assert client.request("server/discover", {}, cache=False)["capabilities"] == {}
