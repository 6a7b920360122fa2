"""A real browser (headless Chromium through Playwright) through the example site: sign in
on the login form, see the consent page, press Allow; mcpsync's OAuth client takes the
code from where the browser was sent. And the consent page refuses to be framed."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, OAuth
from tests.helpers import missing, require_module
from tests.serving import RunningServer

from .conftest import Site
from .oauth_steps import REDIRECT_URI, Pkce, authorize_url, register

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def chromium() -> Iterator[Any]:
    require_module("playwright")
    if not os.path.exists(CHROMIUM):
        missing("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                             timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


class RealBrowser:
    """A redirect handler: Chromium signs in as ``user`` and presses Allow. Playwright's
    sync API belongs to the thread that started it, so the OAuth flow's call is handed to
    that thread and waited for."""

    def __init__(self, browser: Any, user: str) -> None:
        self.browser = browser
        self.user = user
        self.consent_titles: list[str] = []

    def run(self, url: str) -> str:
        context = self.browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        landed: list[str] = []

        def back(route: Any) -> None:  # the client's redirect URI: record it, answer it
            landed.append(route.request.url)
            route.fulfill(status=200, content_type="text/html", body="<p>done</p>")

        page.route(REDIRECT_URI + "**", back)
        try:
            page.goto(url)
            page.fill("input[name=username]", self.user)
            page.fill("input[name=password]", "secret")
            page.click("button[type=submit]")
            page.wait_for_selector("button[value=allow]")
            self.consent_titles.append(page.title())
            page.click("button[value=allow]")
            page.wait_for_url(REDIRECT_URI + "**")
        finally:
            context.close()
        return landed[0]


def on_this_thread(run: Any) -> tuple[Any, Any]:
    """A redirect handler that has ``run`` called on the calling thread (serve() below)."""
    jobs: list[tuple[str, threading.Event, list[Any]]] = []
    ready = threading.Condition()

    def handler(url: str) -> str:
        done = threading.Event()
        box: list[Any] = []
        with ready:
            jobs.append((url, done, box))
            ready.notify_all()
        assert done.wait(60), "the browser did not finish"
        if isinstance(box[0], BaseException):
            raise box[0]
        return str(box[0])

    def serve(until: threading.Event) -> None:
        while not until.is_set():
            with ready:
                ready.wait_for(lambda: jobs or until.is_set(), timeout=0.1)
                job = jobs.pop(0) if jobs else None
            if job is not None:
                url, done, box = job
                try:
                    box.append(run(url))
                except BaseException as exc:
                    box.append(exc)
                done.set()

    return handler, serve


def test_sign_in_and_approve_in_chromium(site: Site, chromium: Any) -> None:
    real = RealBrowser(chromium, "bob")
    handler, serve = on_this_thread(real.run)
    finished = threading.Event()
    results: list[Any] = []

    def client_side() -> None:
        try:
            oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=handler,
                          client_name="Chromium Test")
            with Client.http(site.mcp, auth=oauth, protocol_version="2026-07-28",
                             timeout=60) as client:
                results.append(client.call_tool("whoami", {}).content[0].text)
        except BaseException as exc:
            results.append(exc)
        finally:
            finished.set()

    thread = threading.Thread(target=client_side, name="oauth-client")
    thread.start()
    serve(finished)
    thread.join(30)
    assert isinstance(results[0], str), results
    assert results[0].startswith("You are Bob (user bob)")
    assert real.consent_titles == ["Authorize Chromium Test"]


def test_the_consent_page_cannot_be_framed(site: Site, chromium: Any) -> None:
    client_id = register(site)
    target = authorize_url(site, client_id, Pkce.new())
    attacker = RunningServer(lambda e, s: (s("200 OK", [("Content-Type", "text/html")]),
                                           [f'<iframe src="{target}"></iframe>'.encode()])[1])
    try:
        context = chromium.new_context()
        page = context.new_page()
        # Signed in first, so the frame would show the consent page itself.
        page.goto(site.base + "/login")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "secret")
        page.click("button[type=submit]")
        page.wait_for_url(site.base + "/")
        page.goto(attacker.base + "/")
        page.wait_for_load_state("load")
        frame = page.frames[1]
        assert "Allow" not in (frame.content() if frame.url.startswith("http") else "")
        assert not frame.url.startswith(site.base), frame.url
        context.close()
    finally:
        attacker.stop()
