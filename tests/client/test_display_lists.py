"""Every list a client gets back displays in a notebook as a table (issue 41: the lists of
resources, resource templates and prompts printed as plain reprs where the tool list is a
table). Each is still a plain ``list``; server strings come out escaped."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsync import Client, Server

EVIL = '<script>alert("x")</script> | [link](https://x.example)'


def make_server() -> Server:
    server = Server("lists")

    @server.resource("notes://readme", mime_type="text/markdown", description=EVIL)
    def readme() -> str:
        return "hi"

    @server.resource("notes://{name}", description="One note by name.")
    def note(name: str) -> str:
        return name

    @server.prompt(description="Summarize a note.")
    def summarize(name: str, style: str = "short") -> str:
        return f"summarize {name} ({style})"

    return server


@pytest.fixture(scope="module")
def lists() -> dict[str, Any]:
    with Client.memory(make_server(), timeout=30) as client:
        return {"resources": client.list_resources(),
                "templates": client.list_resource_templates(),
                "prompts": client.list_prompts()}


@pytest.mark.parametrize(("kind", "shown"), [
    ("resources", ["notes://readme", "readme", "text/markdown"]),
    ("templates", ["notes://{name}", "note", "One note by name."]),
    ("prompts", ["summarize", "Summarize a note.", "name*", "style"]),
])
def test_each_list_is_a_table(lists, kind, shown):
    items = lists[kind]
    assert isinstance(items, list) and len(items) == 1
    page = items._repr_html_()
    assert page.startswith("<table>")
    markdown = items._repr_markdown_()
    assert markdown.startswith("| ")
    for text in shown:
        assert text.replace("{", "").replace("}", "") in page.replace("{", "").replace(
            "}", "")


def test_server_strings_are_escaped(lists):
    page = lists["resources"]._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    markdown = lists["resources"]._repr_markdown_()
    assert "<script>" not in markdown and "](https" not in markdown


@pytest.mark.parametrize(("kind", "empty"), [
    ("list_resources", "(no resources)"),
    ("list_resource_templates", "(no resource templates)"),
    ("list_prompts", "(no prompts)"),
])
def test_an_empty_list_says_so(kind, empty):
    with Client.memory(Server("empty"), timeout=30) as client:
        items = getattr(client, kind)()
    assert items == []
    assert empty in items._repr_html_() and empty in items._repr_markdown_()
