"""The Django example project's WSGI application (Django + MCP mounted at /mcp), under
werkzeug's threaded server and under waitress: Django's views keep working and /mcp
serves MCP to the official SDK client and to mcpsync's Client, in both eras."""

from __future__ import annotations

import json

import pytest
import requests

from mcpsync import Client, ElicitResult, HostHandlers

from .helpers import official

MODES = ["legacy", "modern"]


def test_django_views_still_work(django_base):
    index = requests.get(django_base + "/", timeout=10)
    assert index.status_code == 200 and "Django books" in index.text
    books = requests.get(django_base + "/books/", timeout=10)
    assert books.status_code == 200 and books.json()["Dune"] == 1965
    # Django's CommonMiddleware still runs for Django's URLs: /books -> /books/
    redirect = requests.get(django_base + "/books", timeout=10, allow_redirects=False)
    assert redirect.status_code == 301 and redirect.headers["Location"] == "/books/"
    assert requests.get(django_base + "/nowhere/", timeout=10).status_code == 404


@pytest.mark.interop
@pytest.mark.parametrize("mode", MODES)
def test_official_client_over_the_mount(official_python, django_base, mode):
    url = django_base + "/mcp"
    listed = official(url, mode, "list-tools")
    assert {t["name"] for t in listed["tools"]} == {"add_book", "find_book", "rate_book"}
    added = official(url, mode, "call", "add_book", json.dumps({"title": f"B-{mode}",
                                                                 "year": 2001}))
    assert added["rawResult"]["content"][0]["text"] == f"added 'B-{mode}'"
    found = official(url, mode, "--list-first", "progress", "find_book",
                     json.dumps({"title": f"B-{mode}"}))
    assert found["rawResult"]["structuredContent"] == {"title": f"B-{mode}", "year": 2001}
    assert [p["message"] for p in found["progress"]] == ["searching"]
    rated = official(url, mode, "--elicit-json", '{"stars": 4}', "call", "rate_book",
                     '{"title": "Dune"}')
    assert rated["rawResult"]["content"][0]["text"] == "Dune: 4 stars"
    assert [r["method"] for r in rated["serverRequests"]] == ["elicitation/create"]
    catalogue = official(url, mode, "read", "books://catalogue")
    assert json.loads(catalogue["rawResult"]["contents"][0]["text"])[f"B-{mode}"] == 2001
    assert requests.get(django_base + "/books/", timeout=10).json()[f"B-{mode}"] == 2001


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_mcpsync_client_over_the_mount(django_base, version):
    def elicit(params):
        return ElicitResult("accept", {"stars": 5})

    with Client.http(django_base + "/mcp", protocol_version=version, timeout=20,
                     host=HostHandlers(elicitation=elicit)) as client:
        assert client.protocol_version == version
        assert client.call_tool("add_book", {"title": version, "year": 1999}).text == (
            f"added {version!r}")
        found = client.call_tool("find_book", {"title": version})
        assert found.structured_content == {"title": version, "year": 1999}
        assert client.call_tool("rate_book", {"title": version}).text == f"{version}: 5 stars"
        contents = client.read_resource("books://catalogue").contents
        assert json.loads(contents[0].text)[version] == 1999
    assert requests.get(django_base + "/books/", timeout=10).json()[version] == 1999
