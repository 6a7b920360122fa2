"""``mcpsync resources | read | prompts | prompt | inspect`` and ``call`` with KEY=VALUE
words, through the command's entry point run in this process (what it prints and returns
is what is tested; tests/test_cli.py runs the real subprocess), against
tests/cli_surface_server.py over a stdio command line, an HTTP URL in both eras, and in
this process (FILE:OBJ).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli_surface_server import bare, partial, server
from tests.test_cli import assert_usage_error, mcpsync_in_process

SERVER = Path(__file__).resolve().parent / "cli_surface_server.py"
KINDS = ["stdio", "http-2026-07-28", "http-2025-11-25", "memory"]


@pytest.fixture(scope="module")
def urls():
    """The three servers of the fixture file on real sockets: ``{name: url}``."""
    import contextlib

    from tests.serving import RunningServer

    with contextlib.ExitStack() as stack:
        found = {}
        for name, each in (("server", server), ("partial", partial), ("bare", bare)):
            app = each.wsgi_app(path="/mcp")
            found[name] = stack.enter_context(RunningServer(app, on_stop=app.close)).base + "/mcp"
        yield found


def target(kind: str, urls: dict[str, str], which: str = "server") -> list[str]:
    """TARGET (and its --protocol-version) of ``kind`` for the server ``which``."""
    if kind == "stdio":
        return [f"{sys.executable} {SERVER}" + ("" if which == "server" else f" {which}")]
    if kind == "memory":
        return [f"{SERVER}:{which}"]
    return [urls[which], "--protocol-version", kind.removeprefix("http-")]


def run(command: str, kind: str, urls: dict[str, str], *args: str, which: str = "server"):
    where = target(kind, urls, which)
    return mcpsync_in_process(command, where[0], *args, *where[1:])


def ok(done) -> str:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


# -- resources and read -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_resources_lists_resources_and_templates(kind, urls):
    out = ok(run("resources", kind, urls))
    assert out.splitlines() == [
        "resources (2):",
        "  notes://readme  readme (text/markdown)", "      The read-me.",
        "  notes://logo  logo (image/png)", "      A small image.",
        "resource templates (1):",
        "  notes://note/{title}  note", "      One note by title."]
    shape = json.loads(ok(run("resources", kind, urls, "--json")))
    assert [r["uri"] for r in shape["resources"]] == ["notes://readme", "notes://logo"]
    assert shape["resources"][0]["mimeType"] == "text/markdown"
    assert [t["uriTemplate"] for t in shape["resourceTemplates"]] == ["notes://note/{title}"]


@pytest.mark.parametrize("kind", KINDS)
def test_read_prints_text_as_is_with_control_characters_made_visible(kind, urls):
    assert ok(run("read", kind, urls, "notes://readme")) == "# Notes\nline two \\x1b[2J\n"
    assert ok(run("read", kind, urls, "notes://note/first")) == "the first note\n"


@pytest.mark.parametrize("kind", KINDS)
def test_read_describes_a_blob_by_mime_type_and_size(kind, urls):
    assert ok(run("read", kind, urls, "notes://logo")) == \
        "[blob image/png, 32 bytes: notes://logo]\n"
    shape = json.loads(ok(run("read", kind, urls, "notes://logo", "--json")))
    (contents,) = shape["contents"]
    assert contents["uri"] == "notes://logo" and contents["mimeType"] == "image/png"
    assert isinstance(contents["blob"], str)


def test_a_long_text_is_cut_with_a_note_and_whole_in_json(urls):
    out = ok(run("read", "memory", urls, "notes://note/long"))
    assert out == "x" * 100_000 + "\n… (50000 more characters)\n"
    shape = json.loads(ok(run("read", "memory", urls, "notes://note/long", "--json")))
    assert shape["contents"][0]["text"] == "x" * 150_000


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_resource_is_one_line_and_exit_1(kind, urls):
    done = run("read", kind, urls, "notes://note/nope")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == ["mcpsync: no note titled 'nope'"]


# -- prompts and prompt ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_prompts_lists_arguments_with_the_required_ones_marked(kind, urls):
    assert ok(run("prompts", kind, urls)).splitlines() == [
        "review(title*, tone)", "    Review one note.",
        "    title*: The note to review.", "    tone: How to phrase it.",
        "chat(topic*)", "    A short exchange."]
    shape = json.loads(ok(run("prompts", kind, urls, "--json")))
    assert [p["name"] for p in shape] == ["review", "chat"]
    assert shape[0]["arguments"][0] == {"name": "title", "description": "The note to review.",
                                        "required": True}


@pytest.mark.parametrize("kind", KINDS)
def test_prompt_prints_each_message_as_role_and_content(kind, urls):
    assert ok(run("prompt", kind, urls, "chat", "topic=owls = birds")) == (
        "user: Tell me about owls = birds.\nassistant: Gladly.\n")
    # Prompt arguments are strings: "3" stays "3".
    assert ok(run("prompt", kind, urls, "review", "title=3", "tone=dry")) == (
        "user: Please review '3' in a dry tone.\n")
    shape = json.loads(ok(run("prompt", kind, urls, "chat", '{"topic": "owls"}', "--json")))
    assert shape["description"] == "A short exchange."
    assert shape["messages"][1] == {"role": "assistant",
                                    "content": {"type": "text", "text": "Gladly."}}


def test_a_missing_prompt_argument_is_exit_1_in_one_line(urls):
    done = run("prompt", "memory", urls, "review")
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "title" in done.stderr


@pytest.mark.parametrize(("words", "phrase"), [
    (("title",), "argument 'title' is not KEY=VALUE"),
    (('{"title": 3}',), "prompt arguments are strings: 'title' is not"),
    (("title=a", "title=b"), "argument 'title' is given twice"),
])
def test_bad_prompt_arguments_are_usage_errors(words, phrase, urls):
    assert_usage_error(run("prompt", "memory", urls, "review", *words), phrase)


# -- call with KEY=VALUE words -----------------------------------------------------------


def received(out: str) -> dict[str, list[object]]:
    """What the ``typed`` tool says it received: ``{name: [value, python type]}``."""
    return json.loads(out)


@pytest.mark.parametrize("kind", KINDS)
def test_call_types_key_value_words_by_the_tools_schema(kind, urls):
    got = received(ok(run("call", kind, urls, "typed", "count=3", "ratio=1.5", "flag=true",
                          "name=1", 'options={"a": [1, "x"]}', "items=[1, 2]",
                          "maybe=null")))
    assert got == {"count": [3, "int"], "ratio": [1.5, "float"], "flag": [True, "bool"],
                   "name": ["1", "str"], "options": [{"a": [1, "x"]}, "dict"],
                   "items": [[1, 2], "list"], "maybe": [None, "NoneType"]}


def test_call_key_value_details(urls):
    got = received(ok(run("call", "memory", urls, "typed", "ratio=2", "flag=false",
                          "name=true", "maybe=7", "count=-4")))
    assert got["ratio"] == [2.0, "float"] and got["flag"] == [False, "bool"]
    assert got["name"] == ["true", "str"]  # a string is never parsed
    assert got["maybe"] == [7, "int"] and got["count"] == [-4, "int"]
    # A value keeps every "=" after the first; an empty value is the empty string.
    got = received(ok(run("call", "memory", urls, "typed", "name=a=b=c")))
    assert got["name"] == ["a=b=c", "str"]
    assert received(ok(run("call", "memory", urls, "typed", "name=")))["name"] == ["", "str"]


def test_keys_the_schema_does_not_name_are_json_when_they_can_be(urls):
    out = ok(run("call", "memory", urls, "loose", "text=12", "n=12", "word=abc",
                 "flag=true", "list=[1]"))
    assert json.loads(out) == {"text": "12", "n": 12, "word": "abc", "flag": True,
                               "list": [1]}


@pytest.mark.parametrize("kind", ["stdio", "memory"])
def test_one_json_object_still_works(kind, urls):
    got = received(ok(run("call", kind, urls, "typed", '{"count": 2, "name": "x"}')))
    assert got["count"] == [2, "int"] and got["name"] == ["x", "str"]
    assert received(ok(run("call", kind, urls, "typed")))["count"] == [0, "int"]


@pytest.mark.parametrize(("word", "phrase"), [
    ("count=x", "count=x: the parameter 'count' expects integer"),
    ("count=1.5", "the parameter 'count' expects integer"),
    ("ratio=abc", "the parameter 'ratio' expects number"),
    ("ratio=nan", "the parameter 'ratio' expects number"),
    ("flag=yes", "the parameter 'flag' expects boolean (true or false)"),
    ("options={bad", "the parameter 'options' expects object | null (as JSON)"),
    ("options=[1]", "the parameter 'options' expects object | null"),
    ("items={}", "the parameter 'items' expects array of integer | null"),
    ("maybe=many", "the parameter 'maybe' expects integer | null"),
])
@pytest.mark.parametrize("kind", ["stdio", "memory"])
def test_a_value_of_the_wrong_type_is_a_usage_error_naming_the_parameter(word, phrase, kind,
                                                                         urls):
    assert_usage_error(run("call", kind, urls, "typed", word), phrase)


@pytest.mark.parametrize(("words", "phrase"), [
    (("count",), "argument 'count' is not KEY=VALUE"),
    (("count=1", "=2"), "argument '=2' is not KEY=VALUE"),
    (('{"count": ',), "arguments must be JSON"),
    (("count=1", "count=2"), "argument 'count' is given twice"),
])
def test_words_that_are_not_arguments_are_usage_errors(words, phrase, urls):
    assert_usage_error(run("call", "memory", urls, "typed", *words), phrase)


# -- inspect -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_inspect_shows_the_whole_surface(kind, urls):
    version = "2026-07-28" if kind == "http-2026-07-28" else "2025-11-25"
    era = "stateless" if version == "2026-07-28" else "handshake"
    out = ok(run("inspect", kind, urls))
    lines = out.splitlines()
    assert lines[0] == "server: surface 2.5.0 (Surface \\x1b[31mtest\\x1b[0m)"
    assert lines[1] == f"protocol: {version} ({era} era)"
    assert lines[2].startswith("capabilities: tools (listChanged), resources (subscribe, "
                               "listChanged), prompts (listChanged)")
    assert lines[3:6] == ["instructions:", "    Use the tools.", "    Read the notes."]
    assert lines[6] == "tools (2):"
    assert lines[7].startswith("  typed(count: integer, ratio: number, flag: boolean, ")
    for line in ("resources (2):", "resource templates (1):", "prompts (2):",
                 "  notes://note/{title}  note", "  review(title*, tone)"):
        assert line in lines
    shape = json.loads(ok(run("inspect", kind, urls, "--json")))
    assert shape["serverInfo"]["name"] == "surface"
    assert shape["serverInfo"]["title"] == "Surface \x1b[31mtest\x1b[0m"  # JSON: as sent
    assert shape["protocolVersion"] == version
    assert shape["era"] == ("modern" if version == "2026-07-28" else "legacy")
    assert {"tools", "resources", "prompts"} <= set(shape["capabilities"])
    assert shape["instructions"] == "Use the tools.\nRead the notes."
    assert [t["name"] for t in shape["tools"]] == ["typed", "loose"]
    assert shape["tools"][0]["inputSchema"]["properties"]["count"]["type"] == "integer"
    assert len(shape["resources"]) == 2 and len(shape["resourceTemplates"]) == 1
    assert [p["name"] for p in shape["prompts"]] == ["review", "chat"]


@pytest.mark.parametrize("kind", KINDS)
def test_inspect_a_server_without_resources_or_prompts(kind, urls):
    out = ok(run("inspect", kind, urls, which="bare"))
    assert out.splitlines()[3:] == ["tools (1):", "  ping()", "      Answer pong.",
                                    "resources: not offered",
                                    "resource templates: not offered", "prompts: not offered"]
    shape = json.loads(ok(run("inspect", kind, urls, "--json", which="bare")))
    assert shape["resources"] is None and shape["resourceTemplates"] is None
    assert shape["prompts"] is None and shape["instructions"] is None
    assert "resources" not in shape["capabilities"]
    assert ok(run("prompts", kind, urls, which="bare")) == "prompts: not offered\n"
    assert json.loads(ok(run("prompts", kind, urls, "--json", which="bare"))) == []
    assert json.loads(ok(run("resources", kind, urls, "--json", which="bare"))) == {
        "resources": [], "resourceTemplates": []}


@pytest.mark.parametrize("kind", KINDS)
def test_a_list_method_not_found_is_shown_as_not_offered(kind, urls):
    out = ok(run("inspect", kind, urls, which="partial"))
    assert "resources (1):\n  partial://only  only\nresource templates: not offered\n" in out
    assert "tools: none\n" in out
