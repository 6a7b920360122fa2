"""Large catalogues: a generated tool renamed, re-described, its arguments renamed, given
defaults, hidden or fixed, its call wrapped; and the search mode, where ``tools/list``
answers ``search_tools`` and ``call_tool`` only and BM25 ranks the tools, never showing
or calling one the caller's scopes do not allow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import AccessToken, Client, HandlerContext, Server
from mcpsync.routes import ArgTransform, enable_search, transform_tool
from mcpsync.routes.catalogue import BM25, tokens
from tests.routes import flask_books


@pytest.fixture
def books() -> Server:
    return Server.from_wsgi(flask_books.make_app())


def test_a_tool_renamed_redescribed_with_an_argument_renamed_defaulted_and_hidden(
        books: Server):
    new = transform_tool(books, "list_books", new_name="find_books",
                         description="Books on the shelf, by writer.",
                         arguments={"author": ArgTransform(name="writer",
                                                           description="the writer's name"),
                                    "limit": ArgTransform(hide=True, default=1),
                                    "tag": ArgTransform(default=[])})
    assert new == "find_books"
    with Client.memory(books) as client:
        tools = {t.name: t for t in client.list_tools()}
        assert "list_books" not in tools
        tool = tools["find_books"]
        assert tool.description == "Books on the shelf, by writer."
        assert set(tool.input_schema["properties"]) == {"writer", "tag"}
        assert tool.input_schema["properties"]["writer"]["description"] == "the writer's name"
        assert tool.output_schema is not None  # the original's, kept
        everyone = client.call_tool("find_books", {})
        herbert = client.call_tool("find_books", {"writer": "Herbert"})
        refused = client.call_tool("find_books", {"writer": 3})
    assert everyone.structured_content == {"result": [  # limit fixed at 1
        {"id": 1, "title": "Dune", "author": "Herbert", "tags": ["sf"]}]}
    assert herbert.structured_content["result"][0]["author"] == "Herbert"
    assert refused.is_error and "writer" in refused.content[0].text


def test_a_wrapped_call_sees_the_arguments_and_the_result(books: Server):
    calls: list[dict[str, Any]] = []

    def audited(ctx: HandlerContext, arguments: dict[str, Any], call_next: Any) -> Any:
        calls.append(dict(arguments))
        if arguments.get("book_id") == 2:
            return "that one is not for you"
        return call_next(arguments)

    transform_tool(books, "get_book", wrap=audited)
    with Client.memory(books) as client:
        one = client.call_tool("get_book", {"book_id": 1})
        two = client.call_tool("get_book", {"book_id": 2})
    assert one.structured_content["title"] == "Dune"
    assert two.content[0].text == "that one is not for you"
    assert calls == [{"book_id": 1}, {"book_id": 2}]


def test_transforming_what_is_not_there_is_refused(books: Server):
    with pytest.raises(KeyError):
        transform_tool(books, "nope")
    with pytest.raises(ValueError, match="no argument"):
        transform_tool(books, "get_book", arguments={"isbn": ArgTransform(name="x")})
    with pytest.raises(ValueError, match="hidden only with a default"):
        transform_tool(books, "get_book", arguments={"book_id": ArgTransform(hide=True)})
    with pytest.raises(ValueError, match="already registered"):
        transform_tool(books, "get_book", new_name="list_books")


def test_bm25_ranks_rare_words_over_common_ones():
    ranked = BM25([tokens("list books"), tokens("list authors"), tokens("delete books forever")])
    scores = ranked.scores(tokens("delete a book"))
    assert scores[2] > 0 and scores[2] == max(scores)
    assert tokens("getBookCover_v2") == ["get", "book", "cover", "v", "2"]
    both = ranked.scores(tokens("list books"))
    assert both[0] > both[1] and both[0] > both[2]


def catalogue_server() -> Server:
    """Two hundred operations, two of which are about refunds."""
    paths: dict[str, Any] = {}
    for i in range(198):
        paths[f"/widgets/{i}"] = {"get": {"operationId": f"get_widget_{i}",
                                          "summary": f"Read widget number {i} of the catalogue",
                                          "responses": {"200": {"description": "ok"}}}}
    paths["/orders/{order}/refund"] = {"post": {
        "operationId": "refund_order", "summary": "Refund an order to the customer's card",
        "parameters": [{"name": "order", "in": "path", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}
    paths["/refunds"] = {"get": {"operationId": "list_refunds",
                                 "summary": "List the refunds made this month",
                                 "responses": {"200": {"description": "ok"}}}}
    server = Server.from_openapi({"openapi": "3.1.0", "info": {"title": "shop", "version": "1"},
                                  "paths": paths}, base_url="http://127.0.0.1:9")
    return server


def test_search_mode_lists_two_tools_and_finds_the_right_ones():
    server = catalogue_server()
    enable_search(server)
    with Client.memory(server) as client:
        assert [t.name for t in client.list_tools()] == ["search_tools", "call_tool"]
        found = client.call_tool("search_tools", {"query": "refund a customer's order"})
        names = [t["name"] for t in found.structured_content["tools"]]
        assert names[:2] == ["refund_order", "list_refunds"]
        assert found.structured_content["tools"][0]["inputSchema"]["required"] == ["order"]
        limited = client.call_tool("search_tools", {"query": "widget", "limit": 3})
        assert len(limited.structured_content["tools"]) == 3
        called = client.call_tool("call_tool", {"name": "refund_order",
                                                "arguments": {"order": "A1"}})
        assert called.is_error  # reached the tool: nothing listens at the base URL
        assert "127.0.0.1:9" in called.content[0].text
        bad = client.call_tool("call_tool", {"name": "refund_order", "arguments": {}})
        assert bad.is_error and "order" in bad.content[0].text
        unknown = client.call_tool("call_tool", {"name": "nope"})
        assert unknown.is_error and "search_tools" in unknown.content[0].text


def test_search_respects_the_scopes_a_tool_needs():
    server = Server("scoped")

    @server.tool(scopes=["payments:write"])
    def refund_payment(payment: str) -> str:
        """Refund a payment."""
        return f"refunded {payment}"

    @server.tool()
    def show_payment(payment: str) -> str:
        """Show a payment and its refund status."""
        return payment

    @server.request_scope
    def authenticate(ctx: HandlerContext) -> Iterator[None]:
        scopes = frozenset(ctx.meta.get("test/scopes", ()))
        ctx.transport.auth = AccessToken("u", "host", scopes)
        yield

    enable_search(server)
    with Client.memory(server) as client:
        plain = client.call_tool("search_tools", {"query": "refund payment"})
        assert [t["name"] for t in plain.structured_content["tools"]] == ["show_payment"]
        refused = client.call_tool("call_tool", {"name": "refund_payment",
                                                 "arguments": {"payment": "p"}})
        assert refused.is_error
        granted = {"test/scopes": ["payments:write"]}
        full = client.call_tool("search_tools", {"query": "refund payment"}, meta=granted)
        assert [t["name"] for t in full.structured_content["tools"]] == [
            "refund_payment", "show_payment"]
        done = client.call_tool("call_tool", {"name": "refund_payment",
                                              "arguments": {"payment": "p"}}, meta=granted)
        assert done.content[0].text == "refunded p"
