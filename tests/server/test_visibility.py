"""Per-component authorization and visibility (issue 36): ``permission=`` (a codename
checked with ``ctx.user.has_perm``, or a callable), ``tags=`` and ``server.disable`` /
``server.enable``, globally and per principal; a hidden component is absent from lists
and answered exactly like an unknown one; lists that differ by principal are private;
a visibility change is announced; through a mount and a proxy. Both eras, in memory and
over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, MCPError, Server
from mcpsync.server.visibility import MAX_RULES, has_permission
from tests.helpers import WAIT
from tests.http.raw import LEGACY, MODERN, LegacySession, answer_of, post_modern
from tests.server.visibility_server import USERS, build
from tests.serving import RunningServer, client_over

ERAS = [MODERN, LEGACY]


def _client(server: Server, user: str, version: str, **options: Any) -> Client:
    from mcpsync.types import Implementation

    return Client.memory(server, protocol_version=version, timeout=WAIT,
                         client_info=Implementation(user, "1"), **options)


def _error(call: Callable[[], object]) -> tuple[int, str, Any]:
    with pytest.raises(MCPError) as caught:
        call()
    return caught.value.code, caught.value.message, caught.value.data


# -- every transport, both eras --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "stdio", "http"])
@pytest.mark.parametrize("version", ERAS)
def test_on_every_transport_two_users_two_lists_and_no_oracle(kind: str, version: str) -> None:
    from mcpsync.types import Implementation

    module = "tests.server.visibility_server"
    server = build()
    with client_over(kind, server, module, version,
                     client_info=Implementation("alice", "1")) as alice, client_over(
            kind, server, module, version, client_info=Implementation("bob", "1")) as bob:
        assert "refund" in {t.name for t in alice.list_tools()}
        assert {t.name for t in bob.list_tools()} == {"public", "beta_feature"}
        denied = _error(lambda: bob.call_tool("refund", {"order": 1}))
        unknown = _error(lambda: bob.call_tool("refunx", {"order": 1}))
        assert denied[0] == unknown[0] and denied[1] == "Unknown tool: refund"
        assert alice.call_tool("refund", {"order": 1}).text == "refunded 1"


# -- in memory, both eras ----------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_two_users_see_different_lists_and_a_denied_call_is_an_unknown_one(version: str) -> None:
    server = build()
    with _client(server, "alice", version) as alice, _client(server, "bob", version) as bob:
        assert {t.name for t in alice.list_tools()} == {
            "public", "refund", "staff_report", "beta_feature"}
        assert {t.name for t in bob.list_tools()} == {"public", "beta_feature"}
        assert alice.call_tool("refund", {"order": 7}).text == "refunded 7"
        # Denied: the very answer an unknown tool gets, the name aside.
        denied = _error(lambda: bob.call_tool("refund", {"order": 7}))
        unknown = _error(lambda: bob.call_tool("refunx", {"order": 7}))
        assert denied[0] == unknown[0]
        assert denied[1].replace("refund", "?") == unknown[1].replace("refunx", "?")
        assert json.dumps(denied[2]).replace("refund", "?") == json.dumps(
            unknown[2]).replace("refunx", "?")
        assert _error(lambda: bob.call_tool("staff_report"))[1] == "Unknown tool: staff_report"
        # Resources, templates, prompts and completion: the same rule.
        assert [r.uri for r in alice.list_resources()] == ["notes://secret"]
        assert bob.list_resources() == []
        assert bob.list_resource_templates() == []
        assert alice.read_resource("files://a").contents[0].text == "a"
        hidden = _error(lambda: bob.read_resource("notes://secret"))
        nothing = _error(lambda: bob.read_resource("notes://secrex"))
        assert hidden[0] == nothing[0]
        assert hidden[1].replace("secret", "?") == nothing[1].replace("secrex", "?")
        assert _error(lambda: bob.read_resource("files://a"))[0] == nothing[0]
        assert [p.name for p in alice.list_prompts()] == ["refund_letter"]
        assert bob.list_prompts() == []
        prompt = _error(lambda: bob.get_prompt("refund_letter", {"order": "1"}))
        no_prompt = _error(lambda: bob.get_prompt("refund_lettex", {"order": "1"}))
        assert prompt[0] == no_prompt[0]
        assert prompt[1].replace("refund_letter", "?") == no_prompt[1].replace(
            "refund_lettex", "?")
        assert alice.complete("refund_letter", "order", "").values == ["1", "2"]
        completion = _error(lambda: bob.complete("refund_letter", "order", ""))
        assert completion[1] == "Unknown prompt: refund_letter"


def test_no_user_and_a_user_without_has_perm_are_denied() -> None:
    assert not has_permission(None, "shop.issue_refund")
    assert not has_permission(object(), "shop.issue_refund")

    class Raising:
        def has_perm(self, codename: str) -> bool:
            raise RuntimeError("the database is down")

    assert not has_permission(Raising(), "x")
    server = build()
    with _client(server, "nobody", MODERN) as anonymous:  # the adapter finds no user
        assert {t.name for t in anonymous.list_tools()} == {"public", "beta_feature"}


def test_bad_options_fail_at_the_decorator() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match="permission="):
        server.tool(permission=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tags="):
        server.prompt(tags="admin")
    with pytest.raises(TypeError, match=r"'permision'.*permission, retry_safe, tags, task"):
        server.tool(permision="x")
    with pytest.raises(ValueError, match="by name or tags"):
        server.disable()


@pytest.mark.parametrize("version", ERAS)
def test_disable_and_enable_by_tag_and_by_name_announce_the_change(version: str) -> None:
    server = build()
    heard: list[str] = []
    changed = threading.Event()

    def note(method: str, params: Any) -> None:
        if method.endswith("/list_changed"):
            heard.append(method)
            changed.set()

    with _client(server, "bob", version, on_notification=note) as bob:
        listen = bob.listen(tools=True, prompts=False, resources=False) if (
            version == MODERN) else None
        try:
            bob.ping()  # (the session is initialized: it may be told of changes)
            server.disable(tags={"beta"})
            if listen is not None:
                assert listen.get(timeout=WAIT) is not None
            else:
                assert changed.wait(WAIT) and heard == ["notifications/tools/list_changed"]
            assert {t.name for t in bob.list_tools()} == {"public"}
            assert _error(lambda: bob.call_tool("beta_feature"))[1] == (
                "Unknown tool: beta_feature")
            server.enable(tags={"beta"})
            server.disable("public")
            assert {t.name for t in bob.list_tools()} == {"beta_feature"}
            server.enable("public")
            assert {t.name for t in bob.list_tools()} == {"public", "beta_feature"}
            assert server._visibility.rules == ()  # nothing hidden: no gate on the hot path
            assert server.tools.gate is server._visibility  # (the permissions remain)
        finally:
            if listen is not None:
                listen.close()
    changed.clear()
    heard.clear()
    with _client(server, "bob", LEGACY, on_notification=note) as bob:
        bob.ping()
        server.disable(tags={"nothing-has-this"})  # selects nothing: no announcement
        server.disable("refund_letter")
        assert changed.wait(WAIT)
        assert heard == ["notifications/prompts/list_changed"]


def test_a_rule_for_some_principals_and_an_override_for_others() -> None:
    server = build()
    server.disable(tags={"beta"})
    server.enable(tags={"beta"}, principal=lambda ctx: getattr(ctx.user, "is_staff", False))
    with _client(server, "alice", MODERN) as alice, _client(server, "bob", MODERN) as bob:
        assert "beta_feature" in {t.name for t in alice.list_tools()}
        assert "beta_feature" not in {t.name for t in bob.list_tools()}
        server.disable("public", principal=lambda ctx: getattr(ctx.user, "name", "") == "bob")
        assert "public" in {t.name for t in alice.list_tools()}
        assert "public" not in {t.name for t in bob.list_tools()}
        assert alice.call_tool("public").text == "for everyone"


def test_the_rules_are_bounded() -> None:
    server = Server("many")
    for i in range(MAX_RULES):
        server.disable(f"t{i}")
    server.disable("t0")  # the same rule again replaces it
    with pytest.raises(ValueError, match=str(MAX_RULES)):
        server.disable("one-too-many")


def test_a_server_without_permissions_has_no_gate_and_public_lists() -> None:
    server = Server("plain")

    @server.tool(tags={"x"})
    def tagged() -> str:
        return "x"

    assert server.tools.gate is None  # tags alone hide nothing
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        listed = answer_of(post_modern(running.base + "/mcp", "tools/list", {}))
        assert listed["result"].get("cacheScope") != "private"


# -- over real HTTP: the wire answers compared ---------------------------------------------


def test_over_http_a_denied_call_is_byte_for_byte_an_unknown_one_and_lists_are_private(
) -> None:
    app = build().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        bob = {"X-User": "bob"}

        def call(name: str, who: dict[str, str]) -> tuple[int, str]:
            response = post_modern(url, "tools/call", {"name": name, "arguments": {"order": 1}},
                                   headers=who)
            return response.status_code, json.dumps(answer_of(response))

        denied, unknown = call("refund", bob), call("refunx", bob)
        assert denied[0] == unknown[0]
        assert denied[1].replace("refund", "?") == unknown[1].replace("refunx", "?")
        allowed = call("refund", {"X-User": "alice"})
        assert "refunded 1" in allowed[1]
        for who, names in (("alice", {"public", "refund", "staff_report", "beta_feature"}),
                           ("bob", {"public", "beta_feature"})):
            listed = answer_of(post_modern(url, "tools/list", {}, headers={"X-User": who}))
            assert {t["name"] for t in listed["result"]["tools"]} == names
            assert listed["result"]["cacheScope"] == "private"
        read = answer_of(post_modern(url, "resources/read", {"uri": "notes://secret"},
                                     headers=bob))
        missing = answer_of(post_modern(url, "resources/read", {"uri": "notes://secrex"},
                                        headers=bob))
        assert json.dumps(read).replace("secret", "?") == json.dumps(missing).replace(
            "secrex", "?")

        session = LegacySession(url)
        legacy_list = session.call("tools/list", {})
        assert "cacheScope" not in legacy_list["result"]  # a 2026-07-28 field only
        legacy_denied = session.call("tools/call", {"name": "refund", "arguments": {}})
        legacy_unknown = session.call("tools/call", {"name": "refunx", "arguments": {}})
        assert "error" in legacy_denied
        assert {k: v for k, v in legacy_denied.items() if k != "id"} == json.loads(json.dumps(
            {k: v for k, v in legacy_unknown.items() if k != "id"}).replace("refunx", "refund"))


@pytest.mark.parametrize("version", ERAS)
def test_over_http_with_the_client_two_users_two_lists(version: str) -> None:
    app = build().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        with Client.http(url, protocol_version=version, timeout=WAIT,
                         headers={"X-User": "alice"}) as alice, Client.http(
                url, protocol_version=version, timeout=WAIT, headers={"X-User": "bob"}) as bob:
            assert "refund" in {t.name for t in alice.list_tools()}
            assert "refund" not in {t.name for t in bob.list_tools()}
            assert _error(lambda: bob.call_tool("refund", {"order": 1}))[1] == (
                "Unknown tool: refund")
            assert alice.call_tool("refund", {"order": 2}).text == "refunded 2"


# -- through a mount and a proxy ----------------------------------------------------------------


def test_a_mounted_servers_permissions_still_apply() -> None:
    parent = Server("front")

    @parent.request_scope
    def adapter(ctx: HandlerContext) -> Iterator[None]:
        ctx.transport.user = USERS.get(str((ctx.session.client_info or {}).get("name")))
        yield

    child = build("child")
    parent.mount(child, "shop")
    with _client(parent, "alice", MODERN) as alice, _client(parent, "bob", MODERN) as bob:
        assert "shop_refund" in {t.name for t in alice.list_tools()}
        assert "shop_refund" not in {t.name for t in bob.list_tools()}
        assert alice.call_tool("shop_refund", {"order": 3}).text == "refunded 3"
        denied = _error(lambda: bob.call_tool("shop_refund", {"order": 3}))
        unknown = _error(lambda: bob.call_tool("shop_refunx", {"order": 3}))
        assert denied[0] == unknown[0]
        assert denied[1].replace("refund", "?") == unknown[1].replace("refunx", "?")
        child.disable(tags={"beta"})  # the parent's lists follow the mounted server's
        assert "shop_beta_feature" not in {t.name for t in alice.list_tools()}


def test_a_proxys_remote_decides_for_itself() -> None:
    app = build("remote").wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        for who, sees in (("alice", True), ("bob", False)):
            proxy = Server.proxy(url, headers={"X-User": who}, timeout=WAIT)
            try:
                with Client.memory(proxy, protocol_version=MODERN, timeout=WAIT) as client:
                    assert ("refund" in {t.name for t in client.list_tools()}) is sees
                    if not sees:
                        assert _error(lambda c=client: c.call_tool("refund", {"order": 1}))[
                            1] == "Unknown tool: refund"
            finally:
                proxy.stop()


def test_a_listen_does_not_hear_of_a_resource_hidden_from_its_caller() -> None:
    server = build()
    with _client(server, "bob", MODERN) as bob, _client(server, "alice", MODERN) as alice:
        bobs = bob.listen(resource_uris=["notes://"], tools=False, prompts=False,
                          resources=False)
        alices = alice.listen(resource_uris=["notes://"], tools=False, prompts=False,
                              resources=False)
        try:
            server.notify_resource_updated("notes://secret")
            server.notify_resource_updated("notes://public")  # nothing registered: heard
            heard = alices.get(timeout=WAIT)
            assert heard is not None and heard.uri == "notes://secret"
            first = bobs.get(timeout=WAIT)
            assert first is not None and first.uri == "notes://public"
        finally:
            bobs.close()
            alices.close()


def test_a_hidden_component_that_needs_scopes_is_unknown_not_insufficient_scope() -> None:
    """Scopes are checked before the handler: for a hidden item that answer would tell it
    exists, so a hidden item is answered as unknown, whatever scopes it needs."""
    server = build()

    class Token:
        scopes: tuple[str, ...] = ()

    @server.request_scope
    def no_scopes(ctx: HandlerContext) -> Iterator[None]:
        ctx.transport.auth = Token()
        yield

    @server.tool(permission="shop.issue_refund", scopes=["shop:write"])
    def void(order: int) -> str:
        return "voided"

    @server.prompt(permission="shop.issue_refund", scopes=["shop:write"])
    def apology() -> str:
        return "sorry"

    with _client(server, "alice", MODERN) as alice, _client(server, "bob", MODERN) as bob:
        assert "shop:write" in _error(lambda: alice.call_tool("void", {"order": 1}))[1]
        assert _error(lambda: bob.call_tool("void", {"order": 1}))[1] == "Unknown tool: void"
        assert "shop:write" in _error(lambda: alice.get_prompt("apology"))[1]
        assert _error(lambda: bob.get_prompt("apology"))[1] == "Unknown prompt: apology"
        assert _error(lambda: bob.complete("apology", "x", ""))[1] == "Unknown prompt: apology"


def test_a_handshake_era_subscription_to_a_hidden_resource_is_never_told_of_it() -> None:
    server = build()
    heard: list[str] = []
    told = threading.Event()

    def note(method: str, params: Any) -> None:
        if method == "notifications/resources/updated":
            heard.append(params["uri"])
            told.set()

    with _client(server, "bob", LEGACY, on_notification=note) as bob, _client(
            server, "alice", LEGACY, on_notification=note) as alice:
        for client in (bob, alice):
            client.subscribe("notes://secret")  # accepted alike: no oracle
        server.notify_resource_updated("notes://secret")
        assert told.wait(WAIT)
        alice.ping()
        bob.ping()
    assert heard == ["notes://secret"]  # alice's only
