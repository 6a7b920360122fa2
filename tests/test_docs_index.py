"""The README leads to every page of docs/ (issue 41: its list left out the auth, tasks,
testing, Redis and soak pages), and its path from the quickstart to production names the
pages in the order a deployment takes them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_docs_page_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]*)?\)", README))
    pages = {page.name for page in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set(), "README.md does not link these docs pages"
    assert linked - pages == set(), "README.md links docs pages that do not exist"


def test_the_path_to_production_goes_in_order():
    section = README.split("## From the quickstart to production", 1)[1].split("\n## ", 1)[0]
    order = [page for page in re.findall(r"\(docs/([\w-]+)\.md", section)]
    firsts = list(dict.fromkeys(order))
    path = ["quickstart", "wsgi", "deploying", "auth", "observability", "celery"]
    assert [p for p in firsts if p in path] == path


def test_the_quickstart_leads_to_the_path():
    page = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    assert "../README.md#from-the-quickstart-to-production" in page
