"""The preview host in a real browser (headless Chromium): the page frames a sandbox
proxy from another origin, which loads the view; the view's messages go through the
bridge to the server and back.

The views' HTML is served by a real server (in process) through mcpsync's client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, HostHandlers
from mcpsync.apps.host.preview import PreviewServers, preview_of
from mcpsync.apps.wire import host_capabilities
from tests.apps.views import EVIL_JS, HAND_VIEW, meta_server, static_app
from tests.helpers import require_module
from tests.serving import RunningServer

expect = require_module("playwright.sync_api", package="playwright").expect


@pytest.fixture(scope="module")
def scripts() -> Iterator[RunningServer]:
    with RunningServer(static_app({"/evil.js": (EVIL_JS, "text/javascript")})) as running:
        yield running


def _preview(server: Any, tool: str, arguments: dict[str, Any]) -> Iterator[PreviewServers]:
    host = HostHandlers(extra_capabilities=host_capabilities())
    with Client.memory(server, host=host, timeout=20) as client, PreviewServers(
            preview_of(client, tool, arguments, timeout=20)) as servers:
        yield servers


@pytest.fixture()
def strict(scripts: RunningServer) -> Iterator[PreviewServers]:
    """The hand-written view, its resource declaring no CSP: the script at the scripts
    server is not allowed."""
    yield from _preview(meta_server(HAND_VIEW.replace("{evil}", scripts.base)), "show",
                        {"city": "Oslo"})


@pytest.fixture()
def trusting(scripts: RunningServer) -> Iterator[PreviewServers]:
    """The same view, its resource declaring the scripts server in resourceDomains."""
    yield from _preview(meta_server(HAND_VIEW.replace("{evil}", scripts.base),
                                    csp={"resourceDomains": [scripts.base]}),
                        "show", {"city": "Oslo"})


def view_of(page: Any) -> Any:
    """The view's frame: the inner iframe of the sandbox proxy the page frames."""
    return page.frame_locator("#view").frame_locator("iframe")


def test_the_view_is_shown_with_the_tool_input_and_result(page: Any,
                                                          strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    expect(view.locator("#input")).to_have_text('{"city":"Oslo"}')
    expect(view.locator("#result")).to_have_text("sunny in Oslo")
    expect(page.locator("#status")).to_have_text("shown")
    # The fallback text a client without apps shows is on the page too.
    expect(page.locator("#fallback")).to_have_text("sunny in Oslo")
    # The view's size-changed notification sized its frame.
    page.wait_for_function("document.getElementById('view').style.height === '321px'")
    # The proxy is served from another origin than the page (a second loopback port).
    src = page.locator("#view").get_attribute("src")
    assert src is not None and not src.startswith(strict.url.rstrip("/"))
    assert page.locator("#view").get_attribute("sandbox") == "allow-scripts allow-same-origin"


def test_a_button_in_the_view_calls_an_app_tool_through_the_bridge(
        page: Any, strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    view.locator("#call").click()
    expect(view.locator("#out")).to_have_text("refreshed 5")


def test_a_model_only_tool_is_refused_to_the_view(page: Any, strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    view.locator("#forbidden").click()
    expect(view.locator("#forbidden-out")).to_have_text(
        "refused: tool 'secret' is not available to this view")


def test_the_view_reads_a_resource_through_the_bridge(page: Any,
                                                      strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    view.locator("#read").click()
    expect(view.locator("#read-out")).to_have_text("data from the server")


def test_a_script_the_csp_forbids_does_not_run(page: Any, strict: PreviewServers,
                                               scripts: RunningServer) -> None:
    page.goto(strict.url)
    view = view_of(page)
    expect(view.locator("#result")).to_have_text("sunny in Oslo")  # the view ran
    view.locator("#violations").filter(has_text=scripts.base).wait_for()
    expect(view.locator("#violations")).to_contain_text("script-src")
    expect(view.locator("#evil")).to_have_text("did not run")


def test_a_script_from_a_declared_domain_runs(page: Any, trusting: PreviewServers) -> None:
    """The control of the test above: the same script runs once its origin is declared."""
    page.goto(trusting.url)
    view = view_of(page)
    view.locator("#evil").filter(has_text="ran").wait_for()
    expect(view.locator("#violations")).to_have_text("")


def test_the_view_cannot_reach_the_host_page(page: Any, strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    expect(view.locator("#result")).to_have_text("sunny in Oslo")
    expect(view.locator("#parent")).to_have_text("blocked: SecurityError")


def test_closing_tears_the_view_down_first(page: Any, strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    expect(view.locator("#result")).to_have_text("sunny in Oslo")
    page.locator("#close").click()
    expect(page.locator("#status")).to_have_text("closed")
    assert page.locator("#view").count() == 0
    assert page.locator("#log li.from-view", has_text="response host-teardown-1").count() == 1


def test_declared_permissions_are_delegated_to_the_view(page: Any) -> None:
    """Both frames carry the declared permission in ``allow`` (a feature reaches an inner
    frame only through every frame above it); nothing undeclared is there."""
    server = meta_server(HAND_VIEW.replace("{evil}", "http://127.0.0.1:9"),
                         permissions={"geolocation": {}, "clipboardWrite": {}})
    for servers in _preview(server, "show", {"city": "Oslo"}):
        page.goto(servers.url)
        allow = "geolocation; clipboard-write"
        assert page.locator("#view").get_attribute("allow") == allow
        inner = page.frame_locator("#view").locator("iframe")
        expect(inner).to_have_attribute("allow", allow)
        expect(page.frame_locator("#view").frame_locator("iframe").locator("#result")
               ).to_have_text("sunny in Oslo")


def test_leaving_the_page_tells_the_view(page: Any, strict: PreviewServers) -> None:
    page.goto(strict.url)
    view = view_of(page)
    expect(view.locator("#result")).to_have_text("sunny in Oslo")
    page.evaluate("window.dispatchEvent(new Event('pagehide'))")
    expect(view.locator("#teardown")).to_have_text("torn down: the page was left")
