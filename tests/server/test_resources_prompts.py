"""Resources, templates, prompts and completion, client to server, validated on the wire."""

from __future__ import annotations

import base64
import threading

import pytest

from mcpsync import Client, HandlerContext, ImageContent, InvalidParamsError, MCPError, Server
from mcpsync.protocol.uritemplate import UriTemplate
from mcpsync.types import PromptMessage, TextContent, TextResourceContents
from tests.helpers import WAIT
from tests.spec import validate
from tests.wire import WireRecorder

server = Server("library")


@server.resource("test://static-text", description="Plain text.")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    return b"\x89PNG\r\n"


@server.resource("test://template/{id}/data", name="data", mime_type="application/json")
def template_data(id: int) -> dict:
    """Data for one id."""
    return {"id": id, "double": id * 2}


@server.resource("file:///{+path}")
def files(path: str, ctx: HandlerContext) -> TextResourceContents:
    return TextResourceContents(uri=f"file:///{path}", text=f"contents of {path}")


@server.prompt(title="Simple")
def simple() -> str:
    """A prompt without arguments."""
    return "Say hello."


@server.prompt()
def with_args(arg1: str, arg2: str = "default") -> list:
    """Two arguments.

    Args:
        arg1: The first.
        arg2: The second.
    """
    return [f"first {arg1}", PromptMessage("assistant", TextContent(f"second {arg2}"))]


@server.prompt()
def with_image() -> list:
    return [ImageContent("AA==", "image/png"), "describe it"]


@server.completer("with_args", "arg1")
def complete_arg1(value: str, context: dict) -> list[str]:
    return [c for c in ("apple", "apricot", "banana") if c.startswith(value)]


@server.completer("test://template/{id}/data", "id")
def complete_id(value: str, context: dict) -> list[str]:
    return [str(i) for i in range(250) if str(i).startswith(value)]


@pytest.fixture
def client():
    recorder = WireRecorder().install(server)
    with Client.memory(server) as c:
        yield c
    server.recv_middleware.remove(recorder.recv)
    server.send_middleware.remove(recorder.send)
    results = {"resources/list": "ListResourcesResult",
               "resources/templates/list": "ListResourceTemplatesResult",
               "resources/read": "ReadResourceResult", "prompts/list": "ListPromptsResult",
               "prompts/get": "GetPromptResult", "completion/complete": "CompleteResult"}
    for wire, method in recorder.pairs():
        validate("2025-11-25", "JSONRPCMessage", wire if wire.get("id") is not None
                 else {k: v for k, v in wire.items() if k != "id"})
        if method in results and "result" in wire:
            validate("2025-11-25", results[method], wire["result"])


def test_list_and_read(client):
    resources = {r.uri: r for r in client.list_resources()}
    assert set(resources) == {"test://static-text", "test://static-binary"}
    assert resources["test://static-text"].description == "Plain text."
    templates = {t.uri_template: t for t in client.list_resource_templates()}
    assert templates["test://template/{id}/data"].name == "data"
    assert templates["test://template/{id}/data"].description == "Data for one id."

    text = client.read_resource("test://static-text")
    assert text.contents[0].text.startswith("This is the content")
    assert text.contents[0].mime_type == "text/plain"
    blob = client.read_resource("test://static-binary").contents[0]
    assert base64.b64decode(blob.blob) == b"\x89PNG\r\n" and blob.mime_type == "image/png"
    data = client.read_resource("test://template/21/data").contents[0]
    assert data.text == '{"id": 21, "double": 42}' and data.mime_type == "application/json"
    assert client.read_resource("file:///a/b.txt").text == "contents of a/b.txt"


def test_missing_resources_and_traversal(client):
    for uri in ("test://nope", "file:///a/../../etc/passwd", "test://template/x%2F..%2Fy/data"):
        with pytest.raises(MCPError) as info:
            client.read_resource(uri)
        assert info.value.code == -32002  # the handshake era's "resource not found"
        assert info.value.data == {"uri": uri}
    with pytest.raises(InvalidParamsError, match=r"integer|int"):
        client.read_resource("test://template/abc/data")


def test_prompts(client):
    prompts = {p.name: p for p in client.list_prompts()}
    assert prompts["simple"].title == "Simple" and prompts["simple"].arguments is None
    args = prompts["with_args"].arguments
    assert [(a.name, a.required, a.description) for a in args] == [
        ("arg1", True, "The first."), ("arg2", False, "The second.")]
    simple = client.get_prompt("simple")
    assert simple.messages[0].role == "user" and simple.messages[0].content.text == "Say hello."
    assert simple.description == "A prompt without arguments."
    rendered = client.get_prompt("with_args", {"arg1": "x"})
    assert [(m.role, m.content.text) for m in rendered.messages] == [
        ("user", "first x"), ("assistant", "second default")]
    image = client.get_prompt("with_image")
    assert image.messages[0].content.type == "image"
    with pytest.raises(InvalidParamsError, match="arg1"):
        client.get_prompt("with_args")
    with pytest.raises(InvalidParamsError, match="Unknown prompt"):
        client.get_prompt("nope")


def test_completion(client):
    assert client.complete("with_args", "arg1", "ap").values == ["apple", "apricot"]
    many = client.complete("test://template/{id}/data", "id", "")
    assert len(many.values) == 100 and many.total == 250 and many.has_more is True
    assert client.complete("with_args", "arg2", "").values == []
    with pytest.raises(InvalidParamsError):
        client.complete("nope", "x", "")


def test_subscriptions():
    updates = []
    got = threading.Event()

    def note(method, params):
        if method == "notifications/resources/updated":
            updates.append(params["uri"])
            got.set()

    with Client.memory(server, on_notification=note) as c:
        c.subscribe("test://static-text")
        server.notify_resource_updated("test://static-binary")  # not subscribed: nothing
        server.notify_resource_updated("test://static-text")
        assert got.wait(WAIT)
        c.unsubscribe("test://static-text")
        server.notify_resource_updated("test://static-text")
        c.ping()
    assert updates == ["test://static-text"]


def test_uri_template_expansion_roundtrip():
    t = UriTemplate("x://{a}/{b}{?q,n}")
    uri = t.expand({"a": "one two", "b": "é", "q": "hi there", "n": 3})
    assert t.match(uri) == {"a": "one two", "b": "é", "q": "hi there", "n": "3"}
    assert t.match("x://only") is None


def test_client_raises_resource_not_found_error(client):
    from mcpsync import ResourceNotFoundError

    with pytest.raises(ResourceNotFoundError):
        client.read_resource("test://missing")


def test_a_prompt_message_with_plain_string_content_is_a_text_block():
    """``{"role": "user", "content": "text"}`` (and a PromptMessage with a string) went
    out with a bare string as ``content``, which the spec's PromptMessage does not allow
    (a client validating the answer refuses it). A wrong role or content is the server's
    error, answered -32603, never sent."""
    from mcpsync import Client, InternalError, PromptMessage, Server

    server = Server("prompts")

    @server.prompt()
    def plain() -> list:
        return [{"role": "user", "content": "plain"},
                PromptMessage("assistant", "reply")]  # type: ignore[arg-type]

    @server.prompt()
    def wrong_role() -> list:
        return [{"role": "system", "content": "x"}]

    @server.prompt()
    def wrong_content() -> list:
        return [{"role": "user", "content": 42}]

    with Client.memory(server) as client:
        raw = client.request("prompts/get", {"name": "plain"})
        assert raw["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "plain"}},
            {"role": "assistant", "content": {"type": "text", "text": "reply"}}]
        for name in ("wrong_role", "wrong_content"):
            with pytest.raises(InternalError):
                client.get_prompt(name)
