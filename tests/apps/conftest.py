"""The apps tests' browser: a headless Chromium: the distribution's (``/usr/bin/chromium``),
driven by Playwright (its own browser downloads are never used). Skips when either is
missing, unless ``MCPSYNC_REQUIRE_PEERS=1`` (CI), where a missing one fails."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import missing, require_module

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = require_module("playwright.sync_api", package="playwright")
    path = chromium_path()
    if path is None:
        missing("chromium is not installed (scripts/install-peers installs it)")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    try:
        yield opened
    finally:
        context.close()
